package cli

import (
	"fmt"
	"os"
	"strings"

	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/cli/views"
	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/sim"
	"poolc.dev/poolc/sim/scenario"
	"poolc.dev/poolc/sim/scenarios"
)

var simulateHelp = `Runs a scenario (a timeline of faults, demand and operator actions) against
the pool in a discrete-event model of the fleet, in virtual time, with the
real placer and planner, and the runner's own scheduling rules
(parallelism, retries with backoff, step timeout, skips, cancellation)
carrying the plans out, and reports per
controller mode: SLO %, requests served and sent to the cloud, cold waits
(count and p95), GB reloaded (weights loaded that no plan asked for: on
demand, or restored after a fault), GB loaded by the controller's plans,
interruptions, residency changes per hour (the controller's), evictions
(the gateway's), guard aborts, and the timeline of the controller's
actions.

Modes: off (nothing moves but gateway admission), advise (plans are
recorded, not applied), auto (plans are applied), all (the three side by
side). With --base the same scenario and seed also run against the
configuration at --base, side by side: what a pull request changes.

Reference scenarios (by NAME, written for examples/spark-lab): ` + strings.Join(scenarios.Names(), ", ") + `.
A FILE is a .hcl or .cue scenario file (schema/scenario.cue).

Examples:
  poolc simulate --scenario pair-crash examples/spark-lab
  poolc simulate --scenario pair-crash --mode all examples/spark-lab
  poolc simulate --scenario pair-crash --base ../main/pools pools/ --format markdown

The same seed gives the same output, byte for byte.

Exit codes: 0 success, 1 an invalid pool or scenario, or an error.`

func runSimulate(o *arguments.Simulate, io Stdio) int {
	args := o.Paths.Paths
	fail := func(format string, a ...any) int {
		views.Failure(io.Err, "simulate", fmt.Sprintf(format, a...))
		return ExitError
	}
	switch {
	case o.List:
		return listScenarios(io)
	case o.Print != "":
		_, src, ok := scenarios.Lookup(o.Print)
		if !ok {
			return fail("no reference scenario %q: want one of %s", o.Print, strings.Join(scenarios.Names(), ", "))
		}
		views.ScenarioSource(io.Out, src)
		return ExitOK
	}
	if o.Scenario == "" {
		return fail("--scenario is required: one of %s, or a scenario file", strings.Join(scenarios.Names(), ", "))
	}
	if o.Format != "text" && o.Format != "json" && o.Format != "markdown" {
		return fail("unknown --format %q: want text, json or markdown", o.Format)
	}
	modes, err := simModes(o.Mode)
	if err != nil {
		return fail("%v", err)
	}
	head, diags := compiler.Load(args)
	if diags.HasErrors() {
		writeDiagnostics(io, diags)
		return ExitError
	}
	sf, sdiags := readScenario(o.Scenario, head.Dir())
	if sf == nil || sdiags.HasErrors() {
		return scenarioRefused(io, o.Scenario, sdiags)
	}
	configs := []struct {
		name string
		cfg  *compiler.Config
	}{{"head", head}}
	if len(o.Base) > 0 {
		base, bd := compiler.Load(o.Base)
		if bd.HasErrors() {
			writeDiagnostics(io, bd)
			return ExitError
		}
		configs = append([]struct {
			name string
			cfg  *compiler.Config
		}{{"base", base}}, configs...)
	}
	var all []*pools.Pool
	for _, c := range configs {
		all = append(all, c.cfg.Pool)
	}
	if d := sf.Check(all...); d.HasErrors() {
		return scenarioRefused(io, o.Scenario, d)
	}
	sc := sf.Scenario
	if o.Duration > 0 {
		sc.Duration = o.Duration
	}
	if o.Seed != 0 {
		sc.Seed = o.Seed
	}
	var runs []sim.Outcome
	for _, c := range configs {
		for _, m := range modes {
			label := m
			if len(configs) > 1 {
				label = sim.Mode(c.name + " " + string(m))
			}
			opt := sim.Options{Mode: m, LoadConfig: loadPool(sf), AllowAbsent: len(configs) > 1}
			if o.Progress || isTerminal(io.Err) {
				opt.Progress = views.SimulationProgress(io.Err, string(label), sc.Duration)
			}
			res, err := sim.Run(c.cfg.Pool, sc, opt)
			if opt.Progress != nil {
				views.SimulationProgressDone(io.Err)
			}
			if err != nil {
				return fail("%s, mode %s: %v", c.name, m, err)
			}
			runs = append(runs, sim.Outcome{Config: c.name, Mode: m, Result: res})
		}
	}
	views.Simulation(io.Out, o.Format, sc, head.Pool.Name, runs, len(configs) > 1)
	return ExitOK
}

func simModes(mode string) ([]sim.Mode, error) {
	switch mode {
	case "off", "advise", "auto":
		return []sim.Mode{sim.Mode(mode)}, nil
	case "all":
		return []sim.Mode{"off", "advise", "auto"}, nil
	}
	return nil, fmt.Errorf("unknown --mode %q: want off, advise, auto or all", mode)
}

// listScenarios writes the reference scenarios, one a line: the name and
// what it does.
func listScenarios(io Stdio) int {
	var rows []views.ScenarioRow
	for _, name := range scenarios.Names() {
		file, src, _ := scenarios.Lookup(name)
		f, diags := scenario.Read(file, src)
		if f == nil || diags.HasErrors() {
			writeDiagnostics(io, diags)
			return ExitError
		}
		rows = append(rows, views.ScenarioRow{Name: name, Duration: f.Scenario.Duration, Description: f.Scenario.Description})
	}
	views.Scenarios(io.Out, rows)
	return ExitOK
}

// scenarioRefused reports a scenario's mistakes; one in a reference
// scenario says how to get a copy to adapt, since its file is embedded.
func scenarioRefused(io Stdio, name string, d pools.Diagnostics) int {
	writeDiagnostics(io, d)
	if file, _, ok := scenarios.Lookup(name); ok {
		views.ReferenceScenarioRefused(io.Err, name, file)
	}
	return ExitError
}

// readScenario reads a reference scenario by name, whose config events are
// relative to the pool, or a scenario file.
func readScenario(name, poolDir string) (*scenario.File, pools.Diagnostics) {
	if file, src, ok := scenarios.Lookup(name); ok {
		f, diags := scenario.Read(file, src)
		if f != nil {
			f.Base = poolDir
		}
		return f, diags
	}
	if _, err := os.Stat(name); err != nil {
		var d pools.Diagnostics
		d.ErrorAt("scenario", pools.Pos{}, "no reference scenario %q (%s) and no such file", name, strings.Join(scenarios.Names(), ", "))
		return nil, d
	}
	return scenario.ReadFile(name)
}

// loadPool loads the configuration of a config event.
func loadPool(sf *scenario.File) func(string) (*pools.Pool, error) {
	return func(path string) (*pools.Pool, error) {
		cfg, diags := compiler.Load([]string{sf.ConfigPath(path)})
		if diags.HasErrors() {
			return nil, diags.Err()
		}
		return cfg.Pool, nil
	}
}
