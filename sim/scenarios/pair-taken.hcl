# Another team takes the pair at 02:00 (profile pair-taken cordons it) and
# gives it back at 08:00: one apply each way, nothing in between.
scenario "pair-taken" {
  description = "profile pair-taken from 02:00 to 08:00"
  duration    = "10h"

  demand "chat" {
    rate_per_minute = 6
  }
  demand "embed" {
    rate_per_minute = 20
    service_seconds = 0.2
  }
  demand "speak" {
    rate_per_minute = 4
  }

  events = [
    { at = "2h", kind = "profile", profile = "pair-taken" },
    { at = "8h", kind = "profile", profile = "standalone" },
  ]
}
