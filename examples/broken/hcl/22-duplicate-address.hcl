# Mistake: nodes "spark-01" and "spark-02" have the same SSH address
# (spark-02's was copied and not changed).
# poolc reports the second node's address as already used by the first.
pool "lab" {
  node "spark-01" {
    address   = "spark-01.lan"
    memory_gb = 128
  }
  node "spark-02" {
    address   = "spark-01.lan"
    memory_gb = 128
  }

  model "qwen3-27b" {
    path      = "/models/qwen3-27b-q4.gguf"
    size_gb   = 17
    memory_gb = 30
  }

  lane "chat" {
    model     = "qwen3-27b"
    residency = "keep-warm"
    placement = ["spark-01", "spark-02"]
    port      = 8081
  }
}
