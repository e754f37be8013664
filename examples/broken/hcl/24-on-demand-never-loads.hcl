# Mistake: on-demand lane "video" (80 GB) may only run on spark-01, where
# keep-warm lanes "cognition" (30 GB) and "embeddings" (12 GB) are pinned:
# 115.2 GB budget - 42 GB pinned = 73.2 GB free, less than 80 GB, so the
# video lane can never load.
# poolc reports the numbers: budget, pinned, free and what video needs.
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
  model "qwen3-embedding" {
    path      = "/models/qwen3-embedding-8b.gguf"
    size_gb   = 8
    memory_gb = 12
  }
  model "video" {
    path      = "/models/video-14b.gguf"
    size_gb   = 28
    memory_gb = 80
  }

  lane "cognition" {
    model     = "qwen3-27b"
    residency = "keep-warm"
    placement = ["spark-01"]
    port      = 8081
  }
  lane "embeddings" {
    model     = "qwen3-embedding"
    residency = "keep-warm"
    placement = ["spark-01"]
    port      = 8090
  }
  lane "video" {
    model     = "video"
    residency = "on-demand"
    placement = ["spark-01"]
    port      = 8097
  }
}
