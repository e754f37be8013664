# The pair (spark-node-01 and spark-node-02) crashes at 02:00 under steady
# demand and comes back at 06:00. Operators have seen: without a controller
# the pair's lanes are simply gone and their aliases go to the cloud or
# fail; with one, lanes move to spark-node-03 and the Mac once the leases
# lapse, and return to the pair after recovery.
scenario "pair-crash" {
  description = "spark-node-01 and spark-node-02 crash at 02:00 and come back at 06:00"
  duration    = "10h"

  demand "chat" {
    rate_per_minute = 6
    service_seconds = 4
  }
  demand "embed" {
    rate_per_minute = 30
    service_seconds = 0.2
  }
  demand "speak" {
    rate_per_minute = 4
  }
  demand "transcribe" {
    rate_per_minute = 3
  }
  demand "draw" {
    rate_per_minute = 0.5
    service_seconds = 20
  }

  events = [
    { at = "2h", kind = "crash", node = "spark-node-01" },
    { at = "2h", kind = "crash", node = "spark-node-02" },
    { at = "6h", kind = "recover", node = "spark-node-01" },
    { at = "6h", kind = "recover", node = "spark-node-02" },
  ]
}
