package sim

import (
	"strings"
	"testing"
	"time"
)

func TestScenarioMistakesAreRefused(t *testing.T) {
	p := sparkLab()
	for _, c := range []struct {
		sc   Scenario
		want string
	}{
		{Scenario{Demand: []Demand{{Alias: "nope", RatePerMinute: 1}}}, `alias "nope"`},
		{Scenario{Demand: []Demand{{Alias: "chat", RatePerMinute: 1, Shape: "weekly"}}}, `shape "weekly"`},
		{Scenario{Events: []Event{{At: time.Hour, Kind: Crash, Node: "nope"}}}, `no node "nope"`},
		{Scenario{Events: []Event{{At: time.Hour, Kind: SwitchProfile, Profile: "nope"}}}, `no profile "nope"`},
		{Scenario{Events: []Event{{At: time.Hour, Kind: StartLane, Lane: "nope"}}}, `no lane "nope"`},
		{Scenario{Events: []Event{{At: time.Hour, Kind: "explode", Node: "mac-studio"}}}, `unknown event kind`},
	} {
		_, err := Run(p, c.sc, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one about %s", c.sc, err, c.want)
		}
	}
	if _, err := Run(p, Scenario{}, Options{Mode: "sometimes"}); err == nil {
		t.Error("an unknown mode was accepted")
	}
}

// Progress hears simulated time advance to the end.
func TestProgress(t *testing.T) {
	p := sparkLab()
	var calls []time.Duration
	_, err := Run(p, Scenario{Duration: 2 * time.Hour, Demand: steady(p, 6)}, Options{
		Progress: func(done, total time.Duration) {
			if total != 2*time.Hour {
				t.Fatalf("total %s", total)
			}
			calls = append(calls, done)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) < 50 || calls[len(calls)-1] != 2*time.Hour {
		t.Fatalf("%d progress reports, the last %s", len(calls), calls[len(calls)-1])
	}
	for i := 1; i < len(calls); i++ {
		if calls[i] < calls[i-1] {
			t.Fatalf("progress went back from %s to %s", calls[i-1], calls[i])
		}
	}
}
