package sim

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// The same seed gives the same result, byte for byte; another seed other
// requests.
func TestSameSeedSameResult(t *testing.T) {
	p := pairCrashPool()
	sc := pairCrash(p)
	first, _ := json.Marshal(run(t, p, sc, ModeAuto))
	again, _ := json.Marshal(run(t, p, sc, ModeAuto))
	if !bytes.Equal(first, again) {
		t.Fatal("two runs with the same seed differ")
	}
	other, err := Run(p, sc, Options{Mode: ModeAuto, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	var one Result
	if err := json.Unmarshal(first, &one); err != nil {
		t.Fatal(err)
	}
	if other.Metrics.Requests == one.Metrics.Requests {
		t.Errorf("seeds 1 and 2 both make %d requests", one.Metrics.Requests)
	}
}

// Advise plans but changes nothing: it measures what off measures, and
// advises each plan once.
func TestAdviseChangesNothing(t *testing.T) {
	p := pairCrashPool()
	sc := pairCrash(p)
	off := run(t, p, sc, ModeOff)
	advise := run(t, p, sc, ModeAdvise)
	logMetrics(t, sc.Name, ModeAdvise, advise)
	if advise.Metrics != off.Metrics {
		t.Errorf("advise measured %+v, off %+v", advise.Metrics, off.Metrics)
	}
	advised := actions(advise, "plan-advised")
	if len(advised) != 1 || advised[0].At < 2*time.Hour || advised[0].At > 3*time.Hour {
		logTimeline(t, advise)
		t.Errorf("plans advised: %v; want one, to leave the pair (once it is back, the fleet matches again)", advised)
	}
}
