# A model whose memory_gb was written for an 8K context, with the context
# since raised to 64K: the KV cache grows eightfold and the estimate from the
# GGUF header passes the declared 24 GB. poolc validate says so, with both
# numbers and the arguments that drive the estimate (a warning; an error
# with --strict-memory). Write the GGUF files first:
#   go run ./examples/memory/writemodels
#   poolc validate examples/memory/context-raised
pool "memory-context-raised" {
  node "spark-01" {
    address   = "spark-01.lan"
    memory_gb = 128
  }

  model "qwen3-32b" {
    path      = "/models/qwen3-32b-q4.gguf"
    source    = "file:///tmp/poolc-example-models/qwen3-32b-q4.gguf"
    size_gb   = 17.2
    memory_gb = 24
    # was ["--ctx-size", "8192", "--flash-attn", "on"]
    args = ["--ctx-size", "65536", "--flash-attn", "on"]
  }

  lane "reasoning" {
    model     = "qwen3-32b"
    residency = "keep-warm"
    placement = ["spark-01"]
    port      = 8081
    aliases   = ["think"]
  }
}
