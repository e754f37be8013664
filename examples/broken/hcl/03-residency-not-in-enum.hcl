# Mistake: lane "chat" has residency = "always-on", which is not one of
# the three residencies.
# poolc reports that residency must be one of "keep-warm", "preferred" or
# "on-demand".
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
    residency = "always-on"
    placement = ["spark-01"]
    port      = 8081
  }
}
