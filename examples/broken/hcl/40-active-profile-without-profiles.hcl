# Mistake: active_profile = "standalone" is set, but the pool declares no
# profile at all (the profile block was forgotten).
# poolc reports that no profile is declared.
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
    placement = ["spark-01"]
    port      = 8081
  }

  active_profile = "standalone"
}
