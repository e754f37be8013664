# Mistake: lane "chat" lists node "spark-1" as its second candidate; the
# node is called "spark-01".
# poolc reports that placement names an undeclared node and suggests
# "spark-01".
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
    placement = ["spark-02", "spark-1"]
    port      = 8081
  }
}
