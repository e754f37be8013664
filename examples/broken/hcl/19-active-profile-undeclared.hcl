# Mistake: active_profile = "stand-alone", but the profile is declared as
# "standalone".
# poolc reports that the active profile is not declared and suggests
# "standalone".
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
  active_profile = "stand-alone"
}
