# spark-lab after an upgrade of the cognition model to new weights, for the
# rolling-upgrade scenario (sim/scenarios/rolling-upgrade.hcl).
pool "spark-lab" {
  guard {
    ceiling    = 0.90 # a load aborts past 90% of a node's memory
    reserve_gb = 8    # ... or when it would leave less than 8 GB free
  }

  node "spark-node-01" {
    address   = "spark-01.lan"
    memory_gb = 128
    labels    = { class = "spark" }
  }
  node "spark-node-02" {
    address   = "spark-02.lan"
    memory_gb = 128
    labels    = { class = "spark" }
  }
  node "spark-node-03" {
    address   = "spark-03.lan"
    memory_gb = 128
    labels    = { class = "spark" }
  }
  node "mac-studio" {
    address   = "mac-studio.lan"
    memory_gb = 192
    labels    = { class = "mac" }
    guard {
      reserve_gb = 16 # macOS wants more room
    }
  }

  model "qwen3-27b" {
    path      = "/models/qwen3.5-27b-q4.gguf"
    source    = "nas.lan:/srv/models/qwen3.5-27b-q4.gguf"
    size_gb   = 18
    memory_gb = 30
    args      = ["--ctx-size", "32768"]
  }
  model "qwen3-embedding" {
    path      = "/models/qwen3-embedding-8b.gguf"
    source    = "nas.lan:/srv/models/qwen3-embedding-8b.gguf"
    size_gb   = 8
    memory_gb = 12
    args      = ["--embedding"]
  }
  model "tts" {
    path      = "/models/tts-1.6b.gguf"
    source    = "nas.lan:/srv/models/tts-1.6b.gguf"
    size_gb   = 4
    memory_gb = 10
  }
  model "whisper" {
    path      = "/models/whisper-large-v3.gguf"
    source    = "nas.lan:/srv/models/whisper-large-v3.gguf"
    size_gb   = 3
    memory_gb = 6
  }
  model "image" {
    path      = "/models/image-12b.gguf"
    source    = "nas.lan:/srv/models/image-12b.gguf"
    size_gb   = 24
    memory_gb = 70
  }
  model "music" {
    path      = "/models/music-3b.gguf"
    source    = "nas.lan:/srv/models/music-3b.gguf"
    size_gb   = 12
    memory_gb = 35
  }
  model "video" {
    path      = "/models/video-14b.gguf"
    source    = "nas.lan:/srv/models/video-14b.gguf"
    size_gb   = 28
    memory_gb = 70
  }

  lane "cognition" {
    model     = "qwen3-27b"
    residency = "keep-warm"
    placement = ["spark-node-03", "mac-studio"] # first live node with room wins
    port      = 8081
  }
  lane "embeddings" {
    model     = "qwen3-embedding"
    residency = "keep-warm"
    aliases   = ["embed"]
    placement = ["spark-node-01", "spark-node-03"]
    port      = 8090
  }
  lane "stt" {
    model     = "whisper"
    residency = "keep-warm"
    aliases   = ["transcribe"]
    placement = ["spark-node-01", "spark-node-03"]
    port      = 8091
  }
  lane "tts-1" {
    model     = "tts"
    residency = "keep-warm"
    placement = ["spark-node-01", "mac-studio"]
    port      = 8092
  }
  lane "tts-2" {
    model     = "tts"
    residency = "keep-warm"
    placement = ["spark-node-02", "mac-studio"]
    port      = 8093
  }
  lane "tts-3" {
    model     = "tts"
    residency = "keep-warm"
    placement = ["spark-node-02", "mac-studio"]
    port      = 8094
  }
  lane "image" {
    model     = "image"
    residency = "preferred"
    placement = ["spark-node-02", "spark-node-03", "mac-studio"]
    port      = 8095
  }
  lane "music" {
    model     = "music"
    residency = "on-demand"
    aliases   = ["music"]
    placement = ["spark-node-01", "mac-studio"]
    port      = 8096
  }
  lane "video" {
    model     = "video"
    residency = "on-demand"
    aliases   = ["video"]
    selector  = { class = "spark" }
    port      = 8097
  }

  alias "chat" {
    lane      = "cognition"
    fallbacks = ["cloud"]
  }
  alias "speak" {
    lane      = "tts-1"
    fallbacks = ["tts-2", "tts-3"]
  }
  alias "draw" {
    lane      = "image"
    fallbacks = ["cloud"]
  }

  profile "standalone" {}
  profile "pair-taken" {
    # spark-node-01 and spark-node-02 are lent to another team.
    cordon = ["spark-node-01", "spark-node-02"]
    lane "cognition" {
      placement = ["mac-studio"] # leave spark-node-03 room for image and video
    }
    lane "image" {
      residency = "on-demand" # no room to keep it loaded on one node
    }
  }
  profile "mac-first" {
    lane "cognition" {
      placement = ["mac-studio", "spark-node-03"] # the Mac when it is up
    }
  }
  active_profile = "standalone"

  pod_pool "harness" {
    image         = "elanous-harness"
    image_sync    = "sim" # copy the image to the members' registries, simulated
    namespace     = "harness"
    pod_memory_gb = 4
    members       = "pool-node-b@node-b:8#k3d-elanous-registry:5051,pool-node-c@node-c:2#k3d-elanous-registry:5052,k3d-elanous-h1:1"
  }

  plugin "sim" {
    builtin = true
  }

  state {
    backend = "file"
    path    = "poolc.state.json"
  }
}
