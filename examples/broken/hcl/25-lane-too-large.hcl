# Mistake: lane "big" serves a 120 GB model, but its candidates have
# budgets of 115.2 GB (spark-01: 128 GB x 0.90) and 56 GB (mac-mini:
# 64 GB - 8 GB reserve); it fits on none of them.
# poolc reports what the lane needs and each candidate's budget.
pool "lab" {
  node "spark-01" {
    address   = "spark-01.lan"
    memory_gb = 128
  }
  node "mac-mini" {
    address   = "mac-mini.lan"
    memory_gb = 64
  }

  model "qwen3-235b" {
    path      = "/models/qwen3-235b-q3.gguf"
    size_gb   = 110
    memory_gb = 120
  }

  lane "big" {
    model     = "qwen3-235b"
    placement = ["spark-01", "mac-mini"]
    port      = 8081
  }
}
