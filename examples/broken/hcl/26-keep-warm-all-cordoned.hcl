# Mistake: the active profile "maintenance" cordons spark-01, the only
# node keep-warm lane "chat" may run on, so the lane cannot be kept warm.
# poolc reports that the lane has no node it may run on, and which
# cordoned nodes it lost.
pool "lab" {
  node "spark-01" {
    address   = "spark-01.lan"
    memory_gb = 128
  }
  node "spark-02" {
    address   = "spark-02.lan"
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

  profile "standalone" {}
  profile "maintenance" {
    cordon = ["spark-01"]
  }
  active_profile = "maintenance"
}
