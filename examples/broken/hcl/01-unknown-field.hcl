# Mistake: a typo in a field name: node "spark-01" sets memroy_gb
# instead of memory_gb.
# poolc reports the unknown field, suggests memory_gb, and does not also
# complain that memory_gb is missing.
pool "lab" {
  node "spark-01" {
    address   = "spark-01.lan"
    memroy_gb = 128
  }

  model "qwen3-27b" {
    path      = "/models/qwen3-27b-q4.gguf"
    size_gb   = 17
    memory_gb = 30
  }

  lane "chat" {
    model     = "qwen3-27b"
    residency = "keep-warm"
    placement = ["spark-01"]
    port      = 8081
  }
}
