# Mistake: alias "chat" lists "cloud" before lane "cognition-2"; the
# hosted fallback must come last, since nothing is tried after it.
# poolc reports that "cloud" must be the last fallback.
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

  lane "cognition-1" {
    model     = "qwen3-27b"
    residency = "keep-warm"
    placement = ["spark-01"]
    port      = 8081
  }
  lane "cognition-2" {
    model     = "qwen3-27b"
    placement = ["spark-01"]
    port      = 8082
  }

  alias "chat" {
    lane      = "cognition-1"
    fallbacks = ["cloud", "cognition-2"]
  }
}
