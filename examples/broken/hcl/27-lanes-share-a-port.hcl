# Mistake: lanes "chat" and "embeddings" both listen on port 8081, and
# both may run on spark-01; the second one could never bind its port.
# poolc reports the port, both lanes and the node they share.
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
  model "qwen3-embedding" {
    path      = "/models/qwen3-embedding-8b.gguf"
    size_gb   = 8
    memory_gb = 12
  }

  lane "chat" {
    model     = "qwen3-27b"
    placement = ["spark-01"]
    port      = 8081
  }
  lane "embeddings" {
    model     = "qwen3-embedding"
    placement = ["spark-02", "spark-01"]
    port      = 8081
  }
}
