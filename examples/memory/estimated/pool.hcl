# A pool whose models declare no memory_gb: poolc reads each model's GGUF
# header and estimates its memory for the args it runs with. The sources
# are files on the machine running poolc; write them with
#   go run ./examples/memory/writemodels
# then see the estimates with
#   poolc validate -v examples/memory/estimated
#   poolc plan examples/memory/estimated
pool "memory-estimated" {
  node "spark-01" {
    address   = "spark-01.lan"
    memory_gb = 128
  }

  node "mac-mini" {
    address   = "mac-mini.lan"
    memory_gb = 64
  }

  model "qwen3-32b" {
    path    = "/models/qwen3-32b-q4.gguf"
    source  = "file:///tmp/poolc-example-models/qwen3-32b-q4.gguf"
    size_gb = 17.2
    args    = ["--ctx-size", "32768", "--flash-attn", "on"]
  }

  model "qwen3-8b" {
    path    = "/models/qwen3-8b-q4.gguf"
    source  = "file:///tmp/poolc-example-models/qwen3-8b-q4.gguf"
    size_gb = 4.6
    args    = ["-c", "16384", "-np", "2"]
  }

  model "llama-3b" {
    path    = "/models/llama-3b-q4.gguf"
    source  = "file:///tmp/poolc-example-models/llama-3b-q4.gguf"
    size_gb = 2
    args    = ["-c", "8192", "-ctk", "q8_0", "-ctv", "q8_0", "-fa", "on"]
  }

  lane "reasoning" {
    model     = "qwen3-32b"
    residency = "keep-warm"
    placement = ["spark-01"]
    port      = 8081
    aliases   = ["think"]
  }

  lane "chat" {
    model     = "qwen3-8b"
    residency = "keep-warm"
    placement = ["mac-mini", "spark-01"]
    port      = 8082
    aliases   = ["chat"]
  }

  lane "tools" {
    model     = "llama-3b"
    residency = "on-demand"
    placement = ["spark-01"]
    port      = 8083
    aliases   = ["tools"]
  }
}
