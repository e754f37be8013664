# Mistake: lane "chat" selects nodes labelled class = "mac", but every
# node is labelled class = "spark".
# poolc reports that the selector matches no node.
pool "lab" {
  node "spark-01" {
    address   = "spark-01.lan"
    memory_gb = 128
    labels    = { class = "spark" }
  }
  node "spark-02" {
    address   = "spark-02.lan"
    memory_gb = 128
    labels    = { class = "spark" }
  }

  model "qwen3-27b" {
    path      = "/models/qwen3-27b-q4.gguf"
    size_gb   = 17
    memory_gb = 30
  }

  lane "chat" {
    model     = "qwen3-27b"
    residency = "keep-warm"
    selector  = { class = "mac" }
    port      = 8081
  }
}
