# A model upgrade rolls out as a configuration change at 02:00: cognition
# gets new weights, so each lane serving them restarts with the new file,
# through an interim where one exists.
scenario "rolling-upgrade" {
  description = "the cognition model is upgraded at 02:00"
  duration    = "4h"

  demand "chat" {
    rate_per_minute = 8
    service_seconds = 3
  }

  events = [
    { at = "2h", kind = "config", config = "upgrade" },
  ]
}
