# Mistake: a number written as a string: node "spark-01" has
# memory_gb = "128" (quoted).
# poolc reports that memory_gb must be a number greater than 0 and shows
# the string it got.
pool "lab" {
  node "spark-01" {
    address   = "spark-01.lan"
    memory_gb = "128"
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
