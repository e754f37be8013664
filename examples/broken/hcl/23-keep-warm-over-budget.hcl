# Mistake: keep-warm lanes "image" (70 GB) and "music" (50 GB) are both
# pinned to spark-01 (their only candidate); 120 GB is more than the
# node's budget of 115.2 GB (128 GB x 0.90).
# poolc reports the node, both lanes with their memory, the total and the
# budget.
pool "lab" {
  node "spark-01" {
    address   = "spark-01.lan"
    memory_gb = 128
  }

  model "image" {
    path      = "/models/image-12b.gguf"
    size_gb   = 24
    memory_gb = 70
  }
  model "music" {
    path      = "/models/music-7b.gguf"
    size_gb   = 16
    memory_gb = 50
  }

  lane "image" {
    model     = "image"
    residency = "keep-warm"
    placement = ["spark-01"]
    port      = 8095
  }
  lane "music" {
    model     = "music"
    residency = "keep-warm"
    placement = ["spark-01"]
    port      = 8096
  }
}
