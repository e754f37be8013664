# Mistake: lane "chat" sets both a placement list and a selector; poolc
# cannot tell which one is meant.
# poolc reports: set placement or selector, not both.
pool "lab" {
  node "spark-01" {
    address   = "spark-01.lan"
    memory_gb = 128
    labels    = { class = "spark" }
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
    selector  = { class = "spark" }
    port      = 8081
  }
}
