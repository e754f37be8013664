# Mistake: plugin "gpu-metrics" pins its binary with a sha256 of 16 hex
# digits (a truncated digest); a sha256 is 64 lowercase hex digits.
# poolc reports that sha256 must be 64 lowercase hexadecimal digits.
pool "lab" {
  node "spark-01" {
    address   = "spark-01.lan"
    memory_gb = 128
  }

  plugin "gpu-metrics" {
    path   = "poolc-plugin-gpu-metrics"
    sha256 = "9f86d081884c7d65"
  }
}
