# spark-node-03's disk fills up at 01:00, then the pair is taken at 02:00:
# the lanes that must move to spark-node-03 cannot fetch their weights, so
# their starts fail and the controller backs off instead of retrying hot.
scenario "disk-full" {
  description = "spark-node-03 runs out of disk for prefetch before the pair is taken"
  duration    = "6h"

  demand "embed" {
    rate_per_minute = 20
    service_seconds = 0.2
  }
  demand "transcribe" {
    rate_per_minute = 3
  }

  events = [
    { at = "1h", kind = "disk-full", node = "spark-node-03" },
    { at = "2h", kind = "profile", profile = "pair-taken" },
  ]
}
