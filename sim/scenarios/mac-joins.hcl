# The Mac Studio joins the fleet at 01:00 while profile mac-first wants
# cognition on it: its weights are prefetched first, then cognition moves
# to the Mac, make before break, with no failed request.
scenario "mac-joins" {
  description = "the Mac joins at 01:00 and cognition moves to it"
  duration    = "3h"

  links {
    default_gbps = 1
    per_node     = { "mac-studio" = 0.5 }
  }

  demand "chat" {
    rate_per_minute = 10
    service_seconds = 3
  }

  events = [
    { at = "0s", kind = "crash", node = "mac-studio" },
    { at = "10m", kind = "profile", profile = "mac-first" },
    { at = "1h", kind = "recover", node = "mac-studio" },
  ]
}
