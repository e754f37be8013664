# Mistake: alias "draw" has fallbacks but no lane, and no lane lists it
# in its aliases, so requests for "draw" have nowhere to go first.
# poolc reports that the alias routes to no lane and shows both fixes.
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
    placement = ["spark-01"]
    port      = 8095
  }

  alias "draw" {
    fallbacks = ["cloud"]
  }
}
