# Mistake: profiles "standalone" and "pair-taken" are declared, but
# active_profile is not set; exactly one profile must be in force.
# poolc reports that none is active and lists the profiles to choose from.
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
    placement = ["spark-01", "spark-02"]
    port      = 8081
  }

  profile "standalone" {}
  profile "pair-taken" {
    cordon = ["spark-01"]
  }
}
