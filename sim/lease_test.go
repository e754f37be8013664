package sim

import (
	"testing"
	"time"
)

// lease-loss: the controller learns of a crash only when the node's
// lease lapses, so its first apply comes one lease TTL (less at most one
// heartbeat interval) after the crash, plus at most one tick.
func TestLeaseLoss(t *testing.T) {
	p := sparkLab()
	crash := 3*time.Hour + 7*time.Second
	sc := Scenario{
		Name:     "lease-loss",
		Duration: 6 * time.Hour,
		Demand:   rate(steady(p, 12), 1, "music", "video"),
		Events:   []Event{{At: crash, Kind: Crash, Node: "spark-node-03"}},
	}
	r := run(t, p, sc, ModeAuto)
	logMetrics(t, sc.Name, ModeAuto, r)
	applies := actions(r, "apply")
	if len(applies) == 0 {
		t.Fatal("no apply after the crash")
	}
	sc = sc.withDefaults()
	ttl, hb, tick := secs(sc.Lease.TTLSeconds), secs(sc.Lease.HeartbeatSeconds), secs(sc.Controller.TickSeconds)
	delay := applies[0].At - crash
	t.Logf("first apply %s after the crash (TTL %s, heartbeat %s, tick %s)", delay, ttl, hb, tick)
	if delay < ttl-hb || delay > ttl+tick {
		t.Errorf("first apply %s after the crash; want between %s and %s", delay, ttl-hb, ttl+tick)
	}
	if expired := actions(r, "lease-expired"); len(expired) != 1 || expired[0].At != applies[0].At {
		t.Errorf("lease expiries %v; want one, at the first apply", expired)
	}
}

// A partition shorter than the lease moves nothing; a longer one does.
func TestPartitionAgainstTheLease(t *testing.T) {
	p := sparkLab()
	for _, c := range []struct {
		length time.Duration
		moves  bool
	}{{60 * time.Second, false}, {80 * time.Second, false}, {5 * time.Minute, true}} {
		sc := Scenario{
			Name:     "partition",
			Duration: 6 * time.Hour,
			Demand:   rate(steady(p, 12), 1, "music", "video"),
			Events:   []Event{{At: 3 * time.Hour, Kind: Partition, Node: "spark-node-03", Duration: c.length}},
		}
		r := run(t, p, sc, ModeAuto)
		logMetrics(t, "partition "+c.length.String(), ModeAuto, r)
		applies := len(actions(r, "apply"))
		switch {
		case !c.moves && (applies != 0 || len(actions(r, "lease-expired")) != 0):
			t.Errorf("a %s partition: %d applies, lease expiries %v", c.length, applies, actions(r, "lease-expired"))
		case c.moves && applies == 0:
			t.Errorf("a %s partition moved nothing", c.length)
		}
	}
}
