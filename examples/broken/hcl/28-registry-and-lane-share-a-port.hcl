# Mistake: the k3d registry of pod-pool member "pool-a" listens on port
# 8081 of spark-01.lan, where lane "chat" listens on the same port.
# poolc reports the host, the port, the lane and the registry.
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
    model     = "qwen3-27b"
    placement = ["spark-01"]
    port      = 8081
  }

  pod_pool "harness" {
    image   = "lab-harness"
    members = "pool-a@spark-01.lan:4#k3d-lab-registry:8081"
  }
}
