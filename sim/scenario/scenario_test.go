package scenario

import (
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/sim"
	"poolc.dev/poolc/sim/scenarios"
)

func sparkLab(t *testing.T) *compiler.Config {
	cfg, diags := compiler.Load([]string{"../../examples/spark-lab"})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	return cfg
}

func TestTheReferenceScenariosFitTheExample(t *testing.T) {
	cfg := sparkLab(t)
	names := scenarios.Names()
	for _, want := range []string{"pair-crash", "lease-loss", "mac-joins", "pair-taken", "demand-flap", "rolling-upgrade", "disk-full"} {
		name, src, ok := scenarios.Lookup(want)
		if !ok {
			t.Fatalf("no reference scenario %s among %v", want, names)
		}
		f, diags := Read(name, src)
		if diags.HasErrors() {
			t.Fatalf("%s: %v", name, diags.Err())
		}
		f.Base = cfg.Dir()
		if diags := f.Check(cfg.Pool); len(diags) > 0 {
			t.Errorf("%s against spark-lab: %v", name, diags.Err())
		}
		if f.Scenario.Name != want || f.Scenario.Duration == 0 || len(f.Scenario.Demand) == 0 {
			t.Errorf("%s decoded to %+v", name, f.Scenario)
		}
	}
}

func TestAScenarioDecodesWithItsDefaults(t *testing.T) {
	_, src, _ := scenarios.Lookup("pair-crash")
	f, _ := Read("pair-crash.hcl", src)
	sc := f.Scenario
	if sc.Duration != 10*time.Hour || sc.Seed != 1 || sc.Lease.TTLSeconds != 90 || sc.Gateway.WaitLimitSeconds != 30 || sc.Controller.StableTicks != 3 {
		t.Errorf("defaults: %+v", sc)
	}
	if len(sc.Events) != 4 || sc.Events[0] != (sim.Event{At: 2 * time.Hour, Kind: sim.Crash, Node: "spark-node-01"}) {
		t.Errorf("events: %+v", sc.Events)
	}
	_, src, _ = scenarios.Lookup("demand-flap")
	f, diags := Read("demand-flap.cue", src)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	bursts := 0
	for _, d := range f.Scenario.Demand {
		if d.Alias == "music" {
			bursts = len(d.Bursts)
			if bursts != 72 || d.Bursts[1].At != 30*time.Minute {
				t.Errorf("CUE comprehension bursts: %d, %+v", bursts, d.Bursts[:2])
			}
		}
	}
	if bursts == 0 {
		t.Error("demand-flap has no bursts of music")
	}
	if c := f.Scenario.Controller; c.PromotePerMinute != 2 || c.DemotePerMinute != 0.5 || c.DemandWindowSeconds != 900 {
		t.Errorf("controller defaults: %+v", c)
	}
}

func TestMistakesInAScenarioArePointedAt(t *testing.T) {
	cfg := sparkLab(t)
	src := `scenario "bad" {
  duration = "2h"
  demand "chatt" {
    rate_per_minute = 1
  }
  models = { qwen4 = { service_seconds = 3 } }
  events = [
    { at = "1h", kind = "crash", node = "spark-node-9" },
    { at = "3h", kind = "profile", profile = "standalone" },
    { at = "1h", kind = "recover" },
  ]
}
`
	f, diags := Read("bad.hcl", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	got := f.Check(cfg.Pool).Err().Error()
	for _, want := range []string{
		`bad.hcl:3:10: demand for alias "chatt", which pool spark-lab does not declare`,
		`bad.hcl:6:14: service time for model "qwen4", which pool spark-lab does not declare`,
		`bad.hcl:8:41: crash event: node "spark-node-9" is not in pool spark-lab`,
		`bad.hcl:9:12: profile event at 3h0m0s is after the scenario's end (2h0m0s)`,
		`bad.hcl:10:5: a recover event names its node`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("findings lack %q:\n%s", want, got)
		}
	}
	f, diags = Read("lease.hcl", []byte("scenario \"l\" {\n  lease {\n    ttl_seconds = 5\n  }\n  controller {\n    promote_per_minute = 0.2\n  }\n}\n"))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	got = f.Check(cfg.Pool).Err().Error()
	for _, want := range []string{
		"lease.hcl:3:19: a lease of 5 s lapses before the next heartbeat (every 10 s)",
		"lease.hcl:5:3: demote_per_minute (0.5) exceeds promote_per_minute (0.2)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("findings lack %q:\n%s", want, got)
		}
	}
	_, diags = Read("typo.hcl", []byte("scenario \"t\" {\n  duraton = \"2h\"\n}\n"))
	if !strings.Contains(diags.Err().Error(), `typo.hcl:2:3: unknown field "duraton"; did you mean "duration"?`) {
		t.Errorf("schema finding: %v", diags.Err())
	}
}
