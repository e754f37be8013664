# Mistake: lane "chat" sets port twice (8081, then 8082), as happens when
# a merge keeps both sides.
# poolc reports the second port. The message comes from the HCL parser
# ("Attribute redefined"), so it differs from the CUE one: this pair is
# left out of the same-message check.
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
    port      = 8082
  }
}
