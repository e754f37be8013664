# Mistake: lane "chat" serves model "qwen3-72b", but only "qwen3-27b" is
# declared.
# poolc reports that the model is not declared and suggests "qwen3-27b".
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
    model     = "qwen3-72b"
    residency = "keep-warm"
    placement = ["spark-01"]
    port      = 8081
  }
}
