# Mistake: node "Mac-Studio" has uppercase letters; names are lowercase.
# poolc reports that the node name must be a lowercase name and says
# which characters are allowed.
pool "lab" {
  node "spark-01" {
    address   = "spark-01.lan"
    memory_gb = 128
  }
  node "Mac-Studio" {
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
    placement = ["spark-01"]
    port      = 8081
  }
}
