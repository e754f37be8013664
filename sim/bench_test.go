package sim

import (
	"testing"
	"time"

	"poolc.dev/poolc/internal/poolgen"
)

// BenchmarkSimulate24h simulates a day of a generated 20-node fleet under
// about a million requests, with a node crashing and coming back, the
// controller in mode auto.
func BenchmarkSimulate24h(b *testing.B) {
	p, err := poolgen.Generate(poolgen.Options{Nodes: 20, Lanes: 200, Members: 4, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	const requests = 1_000_000
	perMinute := requests / (24 * 60) / float64(len(p.Aliases))
	sc := Scenario{
		Name: "bench",
		Events: []Event{
			{At: 6 * time.Hour, Kind: Crash, Node: p.Nodes[3].Name},
			{At: 10 * time.Hour, Kind: Recover, Node: p.Nodes[3].Name},
		},
	}
	for _, a := range p.Aliases {
		sc.Demand = append(sc.Demand, Demand{Alias: a.Name, RatePerMinute: perMinute, ServiceSeconds: 1})
	}
	b.ReportAllocs()
	var res *Result
	for b.Loop() {
		if res, err = Run(p, sc, Options{Mode: ModeAuto}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.Events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(res.Metrics.Requests), "requests")
	b.Logf("%d aliases at %.1f/min: %+v", len(p.Aliases), perMinute, res.Metrics)
}
