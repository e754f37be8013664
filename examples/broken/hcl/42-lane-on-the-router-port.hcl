# Mistake: lane "notes" listens on port 9100, which the llama plugin's
# router_port gives the router of every llama node (the one llama-server
# that serves a node's on-demand lanes); on spark-01 the two could never
# both bind it. poolc reports the lane's port, the node and the setting.
pool "lab" {
  node "spark-01" {
    address   = "spark-01.lan"
    memory_gb = 128
    runtime   = "llama"
  }

  model "qwen3-27b" {
    path      = "/models/qwen3-27b-q4.gguf"
    size_gb   = 17
    memory_gb = 30
  }

  lane "notes" {
    model     = "qwen3-27b"
    residency = "on-demand"
    placement = ["spark-01"]
    port      = 9100
  }

  plugin "llama" {
    builtin = true
    config = {
      router_port = 9100
    }
  }
}
