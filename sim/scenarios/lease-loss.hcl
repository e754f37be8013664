# A node dies and the controller only learns of it when its lease lapses
# (TTL 90 s), so it acts about one TTL plus a tick after the crash. A
# partition shorter than the lease moves nothing.
scenario "lease-loss" {
  description = "spark-node-03 crashes at 01:00; spark-node-01 is cut off for 60 s at 03:00"
  duration    = "5h"

  lease {
    heartbeat_seconds = 10
    ttl_seconds       = 90
  }

  demand "chat" {
    rate_per_minute = 6
  }
  demand "embed" {
    rate_per_minute = 20
    service_seconds = 0.2
  }

  events = [
    { at = "1h", kind = "crash", node = "spark-node-03" },
    { at = "3h", kind = "partition", node = "spark-node-01", duration = "60s" },
  ]
}
