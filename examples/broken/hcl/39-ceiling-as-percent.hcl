# Mistake: the guard's ceiling is written as a percentage (90) instead of
# a fraction of memory (0.90).
# poolc reports that ceiling must be a number greater than 0 and at most 1.
pool "lab" {
  guard {
    ceiling    = 90
    reserve_gb = 8
  }

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
    placement = ["spark-01"]
    port      = 8081
  }
}
