package sim

import (
	"testing"
	"time"
)

// pair-taken: the pair is lent away at 2h and comes back at 8h, by
// cordons or by switching profiles. The controller vacates the pair at
// once and moves back once, each in a single apply.
func TestPairTaken(t *testing.T) {
	p := sparkLab()
	byCordon := []Event{
		{At: 2 * time.Hour, Kind: Cordon, Node: "spark-node-01"},
		{At: 2 * time.Hour, Kind: Cordon, Node: "spark-node-02"},
		{At: 8 * time.Hour, Kind: Uncordon, Node: "spark-node-01"},
		{At: 8 * time.Hour, Kind: Uncordon, Node: "spark-node-02"},
	}
	byProfile := []Event{
		{At: 2 * time.Hour, Kind: SwitchProfile, Profile: "pair-taken"},
		{At: 8 * time.Hour, Kind: SwitchProfile, Profile: "standalone"},
	}
	for _, c := range []struct {
		name   string
		events []Event
	}{{"cordon", byCordon}, {"profile", byProfile}} {
		name, events := c.name, c.events
		t.Run(name, func(t *testing.T) {
			sc := Scenario{Name: "pair-taken", Demand: rate(steady(p, 12), 1, "music", "video"), Events: events}
			r := run(t, p, sc, ModeAuto)
			logMetrics(t, "pair-taken/"+name, ModeAuto, r)
			var away, back int
			for _, a := range actions(r, "apply") {
				if a.At < 8*time.Hour {
					away++
				} else {
					back++
				}
			}
			if away != 1 || back != 1 || r.Metrics.Applies != 2 {
				logTimeline(t, r)
				t.Fatalf("%d applies while the pair is away, %d after; want one each", away, back)
			}
			if r.Metrics.Interruptions != 0 {
				t.Errorf("%d requests cut off; make-before-break should cut none", r.Metrics.Interruptions)
			}
			if steps := actions(r, "step-failed"); len(steps) > 0 {
				t.Errorf("failed steps: %v", steps)
			}
		})
	}
}
