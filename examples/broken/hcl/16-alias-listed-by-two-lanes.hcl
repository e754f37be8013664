# Mistake: lanes "embed-a" and "embed-b" both list alias "embed"; an alias
# routes to one lane (use fallbacks for the other).
# poolc reports the alias conflict at the second lane's aliases entry.
pool "lab" {
  node "spark-01" {
    address   = "spark-01.lan"
    memory_gb = 128
  }

  model "qwen3-embedding" {
    path      = "/models/qwen3-embedding-8b.gguf"
    size_gb   = 8
    memory_gb = 12
  }

  lane "embed-a" {
    model     = "qwen3-embedding"
    aliases   = ["embed"]
    placement = ["spark-01"]
    port      = 8090
  }
  lane "embed-b" {
    model     = "qwen3-embedding"
    aliases   = ["embed"]
    placement = ["spark-01"]
    port      = 8091
  }
}
