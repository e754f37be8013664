package sim

import (
	"testing"
	"time"

	"poolc.dev/poolc/pools"
)

// steady is the same demand on every alias of the pool.
func steady(p *pools.Pool, perMinute float64) []Demand {
	var out []Demand
	for _, a := range p.Aliases {
		out = append(out, Demand{Alias: a.Name, RatePerMinute: perMinute})
	}
	return out
}

// run simulates and fails the test on an error.
func run(t testing.TB, p *pools.Pool, sc Scenario, mode Mode) *Result {
	t.Helper()
	res, err := Run(p, sc, Options{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// logMetrics prints a run's figures, for the test log.
func logMetrics(t testing.TB, name string, mode Mode, r *Result) {
	t.Helper()
	m := r.Metrics
	t.Logf("%-12s %-6s SLO %6.2f%%  requests %6d  served %6d  cloud %5d  failed %5d  cold waits %4d (p95 %5.1fs)  reloaded %6.1f GB (plans %5.1f)  interruptions %4d  residency/h %5.2f  evictions %d  guard aborts %d  applies %d  events %d",
		name, mode, m.SLOPercent, m.Requests, m.Served, m.ToCloud, m.Failed, m.ColdWaits, m.ColdWaitP95Seconds,
		m.GBReloaded, m.GBLoadedByPlans, m.Interruptions, m.ResidencyChangesPerHour, m.Evictions, m.GuardAborts, m.Applies, r.Events)
}

// actions returns the timeline entries of a kind.
func actions(r *Result, kind string) []Action {
	var out []Action
	for _, a := range r.Timeline {
		if a.Kind == kind {
			out = append(out, a)
		}
	}
	return out
}

// logTimeline prints the timeline but for the step entries.
func logTimeline(t testing.TB, r *Result) {
	t.Helper()
	for _, a := range r.Timeline {
		if a.Kind != "step" {
			t.Logf("%10s %-14s %s", a.At.Truncate(time.Second), a.Kind, a.Detail)
		}
	}
}

// rate sets the rate of some aliases' demand.
func rate(ds []Demand, perMinute float64, aliases ...string) []Demand {
	for i := range ds {
		for _, a := range aliases {
			if ds[i].Alias == a {
				ds[i].RatePerMinute = perMinute
			}
		}
	}
	return ds
}
