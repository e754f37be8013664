// Package scenario reads scenario files — a timeline of faults, demand and
// operator actions against a pool, for `poolc simulate` — with the same
// loader, schema checker and messages as pool files (schema/scenario.cue),
// and checks them against the pool they will run on.
package scenario

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/compiler/tree"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/schema"
	"poolc.dev/poolc/sim"
)

// File is a scenario read from a file, with where it came from.
type File struct {
	Scenario sim.Scenario
	// Path is the file, as named in messages.
	Path string
	// Base is the directory config events are relative to: the file's own
	// directory, or the pool's for a reference scenario.
	Base string
	// Sources says where each attribute was written.
	Sources pools.SourceMap
}

// Read reads a scenario file.
func Read(name string, src []byte) (*File, pools.Diagnostics) {
	doc, diags := compiler.Document(compiler.File{Name: name, Src: src}, schema.ScenarioRoot())
	if doc == nil {
		return nil, diags
	}
	entries := doc.Get("scenario")
	if entries == nil || len(entries.Fields) != 1 {
		diags.ErrorAt("scenarios", doc.Pos, "a scenario file declares exactly one scenario")
		return nil, diags
	}
	e := entries.Fields[0]
	f := &File{Path: name, Base: filepath.Dir(name), Sources: compiler.Positions(doc)}
	sc, more := decode(e.Key, e.Value)
	f.Sources.Attach(more)
	f.Scenario = sc
	return f, append(diags, more...)
}

// ReadFile reads a scenario file from disk.
func ReadFile(path string) (*File, pools.Diagnostics) {
	src, err := os.ReadFile(path)
	if err != nil {
		var d pools.Diagnostics
		d.ErrorAt("read", pools.Pos{File: path}, "%v", err)
		return nil, d
	}
	return Read(path, src)
}

func decode(name string, v *tree.Value) (sim.Scenario, pools.Diagnostics) {
	var diags pools.Diagnostics
	dur := func(path pools.Path, s string) time.Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			diags.Errorf("bad-duration", path, "%q is not a duration: %v", s, err)
		}
		return d
	}
	sc := sim.Scenario{
		Name:        name,
		Description: v.StringAt("description"),
		Duration:    dur(pools.Path{"duration"}, v.StringAt("duration")),
		Seed:        uint64(v.NumberAt("seed")),
		SLO:         sim.SLO{WaitSeconds: v.Get("slo").NumberAt("wait_seconds")},
		Gateway: sim.Gateway{
			WaitLimitSeconds:      v.Get("gateway").NumberAt("wait_limit_seconds"),
			RequestTimeoutSeconds: v.Get("gateway").NumberAt("request_timeout_seconds"),
		},
		Lease: sim.Lease{
			HeartbeatSeconds: v.Get("lease").NumberAt("heartbeat_seconds"),
			TTLSeconds:       v.Get("lease").NumberAt("ttl_seconds"),
		},
		Links: sim.Links{DefaultGBps: v.Get("links").NumberAt("default_gbps")},
	}
	if c := v.Get("controller"); c != nil {
		sc.Controller = sim.ControllerSettings{
			TickSeconds:          c.NumberAt("tick_seconds"),
			StableTicks:          int(c.NumberAt("stable_ticks")),
			ResidencyStableTicks: int(c.NumberAt("residency_stable_ticks")),
			MinGainGB:            c.NumberAt("min_gain_gb"),
			CooldownSeconds:      c.NumberAt("cooldown_seconds"),
			LoadBudgetGBPerHour:  c.NumberAt("load_budget_gb_per_hour"),
			BackoffSeconds:       c.NumberAt("backoff_seconds"),
			PromotePerMinute:     c.NumberAt("promote_per_minute"),
			DemotePerMinute:      c.NumberAt("demote_per_minute"),
			DemandWindowSeconds:  c.NumberAt("demand_window_seconds"),
		}
	}
	if ms := v.Get("models"); ms != nil {
		sc.ModelServiceSeconds = map[string]float64{}
		for _, f := range ms.Fields {
			sc.ModelServiceSeconds[f.Key] = f.Value.NumberAt("service_seconds")
		}
	}
	if per := v.Get("links").Get("per_node"); per != nil {
		sc.Links.PerNode = map[string]float64{}
		for _, f := range per.Fields {
			sc.Links.PerNode[f.Key] = f.Value.Num
		}
	}
	if d := v.Get("demand"); d != nil {
		for _, f := range d.Fields {
			dm := sim.Demand{Alias: f.Key, RatePerMinute: f.Value.NumberAt("rate_per_minute"),
				Shape: f.Value.StringAt("shape"), ServiceSeconds: f.Value.NumberAt("service_seconds")}
			if bs := f.Value.Get("bursts"); bs != nil {
				for i, b := range bs.Items {
					at := pools.Path{"demand", f.Key, "bursts", fmt.Sprint(i)}
					dm.Bursts = append(dm.Bursts, sim.Burst{
						At:       dur(append(at, "at"), b.StringAt("at")),
						Duration: dur(append(at, "duration"), b.StringAt("duration")),
						Factor:   b.NumberAt("factor"),
					})
				}
			}
			sc.Demand = append(sc.Demand, dm)
		}
		sort.Slice(sc.Demand, func(i, j int) bool { return sc.Demand[i].Alias < sc.Demand[j].Alias })
	}
	if evs := v.Get("events"); evs != nil {
		for i, e := range evs.Items {
			at := pools.Path{"events", fmt.Sprint(i)}
			ev := sim.Event{
				At: dur(append(at, "at"), e.StringAt("at")), Kind: sim.EventKind(e.StringAt("kind")),
				Node: e.StringAt("node"), Profile: e.StringAt("profile"), Config: e.StringAt("config"), Lane: e.StringAt("lane"),
			}
			if d := e.StringAt("duration"); d != "" {
				ev.Duration = dur(append(at, "duration"), d)
			}
			sc.Events = append(sc.Events, ev)
		}
	}
	return sc, diags
}

// needs says, per event kind, which field it must name.
var needs = map[sim.EventKind]string{
	sim.Crash: "node", sim.Recover: "node", sim.Hang: "node", sim.Partition: "node",
	sim.Cordon: "node", sim.Uncordon: "node", sim.DiskFull: "node",
	sim.SwitchProfile: "profile", sim.ChangeConfig: "config", sim.StartLane: "lane",
}

// Check reports what in the scenario the pools do not have: nodes,
// aliases, profiles, lanes and models it names, config files that do not
// exist, events past the end. With several pools (the configurations a
// comparison runs), a name is missing only when none of them has it: a
// scenario that exercises an alias one configuration removes is what the
// comparison is for.
func (f *File) Check(ps ...*pools.Pool) pools.Diagnostics {
	var diags pools.Diagnostics
	sc := f.Scenario
	where := "pool " + ps[0].Name
	if len(ps) > 1 {
		where = "any configuration compared (pool " + ps[0].Name + ")"
	}
	has := func(found func(*pools.Pool) bool) bool {
		return slices.ContainsFunc(ps, found)
	}
	for _, d := range sc.Demand {
		if !has(func(p *pools.Pool) bool {
			return slices.ContainsFunc(p.Aliases, func(a pools.Alias) bool { return a.Name == d.Alias })
		}) {
			diags.Errorf("unknown-alias", pools.Path{"demand", d.Alias}, "demand for alias %q, which %s does not declare", d.Alias, where)
		}
	}
	for _, m := range slices.Sorted(maps.Keys(sc.ModelServiceSeconds)) {
		if !has(func(p *pools.Pool) bool { return p.Model(m) != nil }) {
			diags.Errorf("unknown-model", pools.Path{"models", m}, "service time for model %q, which %s does not declare", m, where)
		}
	}
	for i, e := range sc.Events {
		at := pools.Path{"events", fmt.Sprint(i)}
		field := needs[e.Kind]
		value := map[string]string{"node": e.Node, "profile": e.Profile, "config": e.Config, "lane": e.Lane}[field]
		switch {
		case value == "":
			diags.Errorf("event", at, "a %s event names its %s", e.Kind, field)
		case field == "node" && !has(func(p *pools.Pool) bool { return p.Node(value) != nil }):
			diags.Errorf("unknown-node", append(at, "node"), "%s event: node %q is not in %s", e.Kind, value, where)
		case field == "profile" && !has(func(p *pools.Pool) bool { return p.Profile(value) != nil }):
			diags.Errorf("unknown-profile", append(at, "profile"), "profile event: %s has no profile %q", where, value)
		case field == "lane" && !has(func(p *pools.Pool) bool { return p.Lane(value) != nil }):
			diags.Errorf("unknown-lane", append(at, "lane"), "start-lane event: %s has no lane %q", where, value)
		case field == "config":
			if _, err := os.Stat(f.ConfigPath(value)); err != nil {
				diags.Errorf("config", append(at, "config"), "config event: %v", err)
			}
		}
		if e.At > sc.Duration {
			diags.Errorf("event", append(at, "at"), "%s event at %s is after the scenario's end (%s)", e.Kind, e.At, sc.Duration)
		}
	}
	if l := sc.Lease; l.TTLSeconds > 0 && l.TTLSeconds <= l.HeartbeatSeconds {
		diags.Errorf("lease", pools.Path{"lease", "ttl_seconds"}, "a lease of %v s lapses before the next heartbeat (every %v s): make ttl_seconds longer than heartbeat_seconds", l.TTLSeconds, l.HeartbeatSeconds)
	}
	if c := sc.Controller; c.DemotePerMinute > c.PromotePerMinute {
		diags.Errorf("controller", pools.Path{"controller", "demote_per_minute"}, "demote_per_minute (%v) exceeds promote_per_minute (%v): a lane would be let go at a rate that holds it warm", c.DemotePerMinute, c.PromotePerMinute)
	}
	f.Sources.Attach(diags)
	return diags
}

// ConfigPath resolves a config event's path against Base.
func (f *File) ConfigPath(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(f.Base, p)
}
