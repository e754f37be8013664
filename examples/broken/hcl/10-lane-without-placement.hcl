# Mistake: lane "chat" says neither where it may run (placement) nor which
# node labels it needs (selector).
# poolc reports that the lane has no placement and shows both ways to
# give one.
pool "lab" {
  node "spark-01" {
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
    port      = 8081
  }
}
