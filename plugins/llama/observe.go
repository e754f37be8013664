package llama

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// RunningLane is a lane observed serving on a node: its own process, or
// (OnDemand) a model of the node's router, whose weights are in memory
// only while Loaded.
type RunningLane struct {
	Lane
	PID      int
	OnDemand bool
	Loaded   bool
	// CommandLine is the process's own (for a router model: the one GET
	// /models reports it started with); Lane's model, port, aliases and
	// Args are read back from it. RSS is the process's resident memory
	// in bytes (the router's, for a router model).
	CommandLine []string
	RSS         int64
}

// Observation is what a node runs: the lanes verified live (their process
// is up and /props serves the model the lane was started with), the drift
// found (a pidfile whose process is gone, serves another model or does
// not answer: not a running lane), the models present, and its memory.
type Observation struct {
	Lanes       []RunningLane
	Drift       []string
	Models      []PresentModel
	MemoryTotal int64 // bytes, 0 when unknown
	MemoryFree  int64
}

// observer reads what a node runs: its lanes verified live (each
// process the one holding its port and serving what its metadata says,
// a router's models as it reports them), the drift found, the model
// files present and the node's memory.
type observer struct {
	*session
	procs *processes
	files *modelFiles
}

// observe carries out Node.Observe.
func (o *observer) observe(ctx context.Context, models []string) (Observation, error) {
	st, err := o.procs.status(ctx)
	if err != nil {
		return Observation{}, err
	}
	obs := Observation{MemoryTotal: st.memTotal, MemoryFree: st.memFree}
	for _, name := range st.order {
		r := st.records[name]
		l := r.meta.lane()
		switch {
		case r.meta.Name == "":
			obs.Drift = append(obs.Drift, fmt.Sprintf("lane %s: pidfile without metadata", name))
			continue
		case !r.alive:
			obs.Drift = append(obs.Drift, fmt.Sprintf("lane %s: pid %d is gone", name, r.pid))
			continue
		case !r.isLane(l):
			obs.Drift = append(obs.Drift, fmt.Sprintf("lane %s: pid %d is not its server (%q)", name, r.pid, strings.Join(r.argv, " ")))
			continue
		}
		// The process must be the one listening on the lane's port: a
		// port another process holds is drift (it serves, not the lane);
		// a listener that cannot be read is not known, an error.
		id, err := o.procs.identity(ctx, r.pid, l)
		var held *PortHeldError
		switch {
		case errors.As(err, &held):
			obs.Drift = append(obs.Drift, held.Error())
			continue
		case err != nil:
			return Observation{}, err
		case !id.listening && (id.unseen || name == RouterLane):
			obs.Drift = append(obs.Drift, fmt.Sprintf("lane %s: %s", name, id.notListening(r.pid, l)))
			continue
		}
		// What runs, read back from the process's own command line.
		c, _ := parseCommand(r.argv)
		l.Host, l.Aliases, l.Args = c.Host, c.Aliases, c.Args
		if !id.listening {
			// The lane's own server, alive, its port closed: told to stop
			// (llama-server closes its port at once on SIGTERM and may
			// live a minute more) by an apply cut off before the SIGKILL.
			// It still holds its memory, so it is the lane, not loaded:
			// the plan stops it, or starts the lane again where it runs,
			// which kills it. Drift would leave it beside its replacement.
			obs.Drift = append(obs.Drift, fmt.Sprintf("lane %s: %s; reported as not loaded, so that a plan stops it or starts the lane again", name, id.notListening(r.pid, l)))
			obs.Lanes = append(obs.Lanes, RunningLane{Lane: l, PID: r.pid, CommandLine: r.argv, RSS: r.rss})
			continue
		}
		if name == RouterLane {
			models, err := o.prober(l).routerModels(ctx)
			if err != nil {
				obs.Drift = append(obs.Drift, fmt.Sprintf("router: pid %d does not answer on port %d: %v", r.pid, l.Port, err))
				continue
			}
			for _, m := range models {
				// Its arguments, read back from the command line the
				// router runs it with.
				lane := Lane{Name: m.Name, Host: l.Host, Port: l.Port, Model: m.Path, Aliases: m.Aliases, Args: routerModelArgs(m.Args, r.argv)}
				for _, started := range r.meta.Models {
					if started.Name == m.Name && started.Path == m.Path {
						lane.SHA256, lane.Source = started.SHA256, started.Source
					}
				}
				obs.Lanes = append(obs.Lanes, RunningLane{Lane: lane, PID: r.pid, OnDemand: true, Loaded: m.State == "loaded", CommandLine: m.Args, RSS: r.rss})
			}
			continue
		}
		p := o.prober(l)
		var pr props
		if err := p.getJSON(ctx, "/props", &pr); err != nil {
			obs.Drift = append(obs.Drift, fmt.Sprintf("lane %s: pid %d does not answer on port %d: %v", name, r.pid, l.Port, err))
			continue
		}
		if pr.ModelPath != l.Model {
			obs.Drift = append(obs.Drift, fmt.Sprintf("lane %s: port %d serves %s, not %s", name, l.Port, pr.ModelPath, l.Model))
			continue
		}
		names, err := p.modelNames(ctx)
		if err != nil {
			obs.Drift = append(obs.Drift, fmt.Sprintf("lane %s: %v", name, err))
			continue
		}
		var aliases []string
		for _, a := range l.Aliases {
			if names[a] {
				aliases = append(aliases, a)
			}
		}
		l.Aliases = aliases
		obs.Lanes = append(obs.Lanes, RunningLane{Lane: l, PID: r.pid, Loaded: true, CommandLine: r.argv, RSS: r.rss})
	}
	// The files running lanes load are asked about too: a lane replaced
	// on its node may load its new weights from a staged path.
	models = slices.Clone(models)
	for _, l := range obs.Lanes {
		if !slices.Contains(models, l.Model) {
			models = append(models, l.Model)
		}
	}
	for _, path := range models {
		m, err := o.files.probeModel(ctx, path)
		if err != nil {
			return obs, err
		}
		if m.Size >= 0 {
			obs.Models = append(obs.Models, PresentModel{Path: path, Size: m.Size, SHA256: m.cachedSHA()})
		}
	}
	return obs, nil
}
