package scenario

import (
	"poolc.dev/poolc/compiler/cuefront"
	"testing"
	"time"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/sim"
	"poolc.dev/poolc/sim/scenarios"
)

// FuzzReadScenario reads an arbitrary scenario file, HCL or CUE (the
// first byte chooses), checks it against the example pool and, when it
// fits and is small, simulates an hour of it in each mode: nothing may
// panic, and a scenario that passes its checks must run.
func FuzzReadScenario(f *testing.F) {
	// In process: a child process per input runs a few inputs a second.
	f.Setenv(cuefront.InProcessEnv, "1")
	for _, name := range scenarios.Names() {
		file, src, _ := scenarios.Lookup(name)
		lang := byte('h')
		if file[len(file)-4:] == ".cue" {
			lang = 'c'
		}
		f.Add(append([]byte{lang}, src...))
	}
	f.Add([]byte("hscenario \"x\" {\n  events = [{ at = \"0s\", kind = \"crash\", node = \"spark-node-03\" }, { at = \"1m\", kind = \"recover\", node = \"spark-node-03\" }]\n}\n"))
	cfg, diags := compiler.Load([]string{"../../examples/spark-lab"})
	if diags.HasErrors() {
		f.Fatal(diags.Err())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		name := "fuzz.hcl"
		if data[0] == 'c' {
			name = "fuzz.cue"
		}
		file, diags := Read(name, data[1:])
		if diags.HasErrors() {
			return
		}
		file.Base = cfg.Dir()
		if diags := file.Check(cfg.Pool); diags.HasErrors() {
			return
		}
		sc := file.Scenario
		sc.Duration = min(sc.Duration, time.Hour)
		if sc.Duration <= 0 {
			sc.Duration = time.Hour
		}
		perMinute := 0.0 // at the peak, were every burst to overlap
		for _, d := range sc.Demand {
			rate := d.RatePerMinute
			for _, b := range d.Bursts {
				rate *= max(1, b.Factor)
			}
			perMinute += rate
		}
		if perMinute*sc.Duration.Minutes() > 20000 || sc.Controller.TickSeconds > 0 && sc.Controller.TickSeconds < 1 {
			return // too long a run for a fuzz input
		}
		for _, e := range sc.Events {
			if e.Kind == sim.ChangeConfig {
				return // loading configurations is FuzzCompileHCL's and FuzzCompileCUE's
			}
		}
		for _, mode := range []sim.Mode{sim.ModeOff, sim.ModeAuto} {
			if _, err := sim.Run(cfg.Pool, sc, sim.Options{Mode: mode}); err != nil {
				t.Fatalf("a scenario that passed its checks does not run in mode %s: %v", mode, err)
			}
		}
	})
}
