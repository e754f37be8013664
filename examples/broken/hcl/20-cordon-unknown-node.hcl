# Mistake: profile "pair-taken" cordons "spark-03", which is not a node
# of this pool (a copy-paste from a larger pool).
# poolc reports that cordon names an undeclared node.
pool "lab" {
  node "spark-01" {
    address   = "spark-01.lan"
    memory_gb = 128
  }
  node "mac-studio" {
    address   = "mac-studio.lan"
    memory_gb = 192
  }

  model "qwen3-27b" {
    path      = "/models/qwen3-27b-q4.gguf"
    size_gb   = 17
    memory_gb = 30
  }

  lane "chat" {
    model     = "qwen3-27b"
    residency = "keep-warm"
    placement = ["spark-01", "mac-studio"]
    port      = 8081
  }

  profile "standalone" {}
  profile "pair-taken" {
    cordon = ["spark-01", "spark-03"]
  }
  active_profile = "standalone"
}
