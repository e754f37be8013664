# Mistake: profile "pair-taken" overrides lane "images", but the lane is
# called "image".
# poolc reports that the overridden lane is not declared and suggests
# "image".
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

  lane "image" {
    model     = "image"
    residency = "preferred"
    placement = ["spark-01"]
    port      = 8095
  }

  profile "standalone" {}
  profile "pair-taken" {
    lane "images" {
      residency = "on-demand"
    }
  }
  active_profile = "standalone"
}
