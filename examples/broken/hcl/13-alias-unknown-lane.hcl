# Mistake: alias "chat" routes to lane "cognitoin", a typo for
# "cognition".
# poolc reports that the lane is not declared and suggests "cognition".
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

  lane "cognition" {
    model     = "qwen3-27b"
    residency = "keep-warm"
    placement = ["spark-01"]
    port      = 8081
  }

  alias "chat" {
    lane      = "cognitoin"
    fallbacks = ["cloud"]
  }
}
