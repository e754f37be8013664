# Mistake: a lane is named "cloud", the name fallbacks use for the hosted
# model; an alias falling back to "cloud" would be ambiguous.
# poolc reports that the name "cloud" is reserved.
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

  lane "cloud" {
    model     = "qwen3-27b"
    placement = ["spark-01"]
    port      = 8081
  }
}
