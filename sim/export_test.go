package sim

// WithDefaults lets the external tests compare the defaults the
// simulator fills in with the schema's.
func WithDefaults(sc Scenario) Scenario { return sc.withDefaults() }
