package llama

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"poolc.dev/poolc/internal/configschema"
	"poolc.dev/poolc/internal/sshx"
	"poolc.dev/poolc/plugins/sdk"
)

// Actuator is the built-in "llama" actuator: the sdk.Actuator serving a
// node's runtime steps (prefetch, start, residency, drain, stop) with
// real llama-server lanes, reaching each node over SSH (or, with local,
// on this machine).
type Actuator struct {
	version string

	mu    sync.Mutex
	cfg   PluginConfig
	inv   sdk.Inventory
	pool  *sshx.Pool
	nodes map[string]*Node
}

var _ sdk.Actuator = (*Actuator)(nil)

// NewActuator returns the actuator reporting version.
func NewActuator(version string) *Actuator { return &Actuator{version: version} }

// PluginConfig is the actuator's config block.
type PluginConfig struct {
	sshx.Settings
	// Local runs the lanes on the machine running poolc, without SSH: a
	// one-machine fleet.
	Local      bool              `json:"local"`
	Binary     string            `json:"llama_server"`
	StateDir   string            `json:"state_dir"`
	ListenHost string            `json:"listen_host"`
	Env        map[string]string `json:"env"`
	// The timings, in seconds (and MiB/s); 0 leaves the package default.
	StartBaseSeconds    float64 `json:"start_base_seconds"`
	LoadMiBPerSecond    float64 `json:"load_mib_per_second"`
	DrainTimeoutSeconds float64 `json:"drain_timeout_seconds"`
	StopGraceSeconds    float64 `json:"stop_grace_seconds"`
	ProbeTimeoutSeconds float64 `json:"probe_timeout_seconds"`
	// CommandTimeoutSeconds bounds a remote command of no size; checksums
	// and transfers get more in proportion to their size, at the slowest
	// rates expected (MiB/s).
	CommandTimeoutSeconds float64 `json:"command_timeout_seconds"`
	ChecksumMiBPerSecond  float64 `json:"checksum_mib_per_second"`
	TransferMiBPerSecond  float64 `json:"transfer_mib_per_second"`
	// MaxOutputBytes bounds what is read back of a remote command's
	// output (0: sshx.DefaultMaxOutput).
	MaxOutputBytes int64 `json:"max_output_bytes"`
	// RouterPort is the port of each node's router, which serves the
	// node's on-demand lanes (0: pools.DefaultRouterPort).
	RouterPort int `json:"router_port"`
	// ServiceManager is how a lane's own process runs: "none" (detached,
	// the default), "systemd" (a user unit) or "launchd" (a LaunchAgent).
	ServiceManager string `json:"service_manager"`
}

// ConfigSchema is the CUE schema of the config block.
const ConfigSchema = `{
	` + sshx.SettingsSchema + `
	local?:        bool
	llama_server?: ` + configschema.Command + `
	state_dir?:    ` + configschema.NodePath + `
	listen_host?:  ` + configschema.Host + `
	env?:          ` + configschema.Env + `
	start_base_seconds?:    number & >0
	load_mib_per_second?:   number & >0
	drain_timeout_seconds?: number & >0
	stop_grace_seconds?:    number & >0
	probe_timeout_seconds?: number & >0
	command_timeout_seconds?: number & >0
	checksum_mib_per_second?: number & >0
	transfer_mib_per_second?: number & >0
	max_output_bytes?:        int & >=4096
	router_port?:           int & >=1 & <=65535
	service_manager?:       ` + serviceManagerSchema + `
}`

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func (c PluginConfig) settings() Settings {
	return Settings{Binary: c.Binary, StateDir: c.StateDir, Env: c.Env,
		LoadRate: int64(c.LoadMiBPerSecond * (1 << 20)), StartBase: seconds(c.StartBaseSeconds),
		DrainTimeout: seconds(c.DrainTimeoutSeconds), StopGrace: seconds(c.StopGraceSeconds), ProbeTimeout: seconds(c.ProbeTimeoutSeconds),
		CommandTimeout: seconds(c.CommandTimeoutSeconds), ChecksumRate: int64(c.ChecksumMiBPerSecond * (1 << 20)),
		TransferRate: int64(c.TransferMiBPerSecond * (1 << 20)), ServiceManager: c.ServiceManager}
}

// Describe implements sdk.Actuator.
func (a *Actuator) Describe(context.Context, sdk.DescribeRequest) sdk.DescribeResponse {
	return sdk.DescribeResponse{Name: "llama", Version: a.version, StepKinds: sdk.RuntimeKinds, ConfigSchema: ConfigSchema,
		Capabilities: sdk.Capabilities{Observes: []string{sdk.ObserveNodes, sdk.ObserveLanes, sdk.ObservePrefetched}, ApplyObserves: true}}
}

// Configure implements sdk.Actuator.
func (a *Actuator) Configure(_ context.Context, req sdk.ConfigureRequest) sdk.ConfigureResponse {
	var cfg PluginConfig
	if ds := sdk.DecodeConfig(ConfigSchema, req.ConfigJSON, &cfg); ds.HasErrors() {
		return sdk.ConfigureResponse{Diagnostics: ds}
	}
	for _, l := range req.Inventory.Lanes {
		if l.Port == cfg.routerPort() {
			return sdk.ConfigureResponse{Diagnostics: sdk.Errorf([]string{"router_port"},
				fmt.Sprintf("lane %s has port %d, where each node's router listens for the on-demand lanes: set router_port (here and in the gateway's block) to a port no lane uses", l.Name, l.Port))}
		}
	}
	if ds := checkOnDemandArgs(req.Inventory); ds.HasErrors() {
		return sdk.ConfigureResponse{Diagnostics: ds}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pool != nil {
		a.pool.Close()
		a.pool = nil
	}
	a.nodes = nil
	if !cfg.Local {
		sc := cfg.Settings.Config()
		sc.MaxOutput = cfg.MaxOutputBytes
		pool, err := sshx.NewPool(sc)
		if err != nil {
			return sdk.ConfigureResponse{Diagnostics: sdk.Errorf([]string{"known_hosts"}, err.Error())}
		}
		a.pool = pool
	}
	a.cfg, a.inv, a.nodes = cfg, req.Inventory, map[string]*Node{}
	return sdk.ConfigureResponse{}
}

// checkOnDemandArgs refuses an on-demand lane whose model's arguments
// its router preset section cannot hold (see presetOptions), before any
// step runs.
func checkOnDemandArgs(inv sdk.Inventory) sdk.Diagnostics {
	args := map[string][]string{}
	for _, m := range inv.Models {
		args[m.Name] = m.Args
	}
	var ds sdk.Diagnostics
	for _, l := range inv.Lanes {
		if l.Residency != sdk.OnDemand {
			continue
		}
		if _, err := presetOptions(args[l.Model]); err != nil {
			ds = append(ds, sdk.Errorf(nil, fmt.Sprintf("on-demand lane %s (model %s): %v", l.Name, l.Model, err))...)
		}
	}
	return ds
}

// inventory is the inventory Configure gave.
func (a *Actuator) inventory() sdk.Inventory {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.inv
}

// node returns the lanes of n, reached as configured. A relative
// state_dir is resolved against the login's home on the node, once, so
// that every path poolc writes there or gives a process (the router's
// preset) is absolute and names the same files.
func (a *Actuator) node(ctx context.Context, n sdk.Node) (*Node, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.nodes == nil {
		return nil, errors.New("llama: not configured")
	}
	if got := a.nodes[n.Name]; got != nil {
		return got, nil
	}
	var host Host = Local{MaxOutput: a.cfg.MaxOutputBytes}
	if !a.cfg.Local {
		if n.Address == "" {
			return nil, fmt.Errorf("node %s has no address to reach over SSH", n.Name)
		}
		host = SSH{Client: a.pool.Client(sshx.Endpoint{User: a.cfg.LoginUser(n.SSHUser), Host: n.Address, Port: n.SSHPort})}
	}
	set := a.cfg.settings()
	// One state directory per node: on a real fleet a node is a machine,
	// and several nodes sharing one machine keep their lanes apart.
	set.StateDir = path.Join(set.withDefaults().StateDir, n.Name)
	if !path.IsAbs(set.StateDir) {
		home, err := loginHome(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
		set.StateDir = path.Join(home, set.StateDir)
	}
	node := NewNode(host, set)
	a.nodes[n.Name] = node
	return node, nil
}

// lane is the process a step's lane runs as. It listens on the node's
// address, where the gateway's route reaches it, unless listen_host says
// otherwise ("0.0.0.0" for every interface).
func (a *Actuator) lane(l *sdk.Lane) Lane {
	host := a.cfg.ListenHost
	if host == "" {
		host = l.Node.Address
	}
	return Lane{Name: l.Name, Host: host, Port: l.Port, Model: l.Model.Path, Aliases: l.Aliases,
		Args: l.Model.Args, SizeBytes: int64(l.Model.SizeGB * 1e9), SHA256: l.Model.SHA256, Source: l.Model.Source, Residency: l.Residency}
}

// Apply implements sdk.Actuator.
func (a *Actuator) Apply(ctx context.Context, req sdk.ApplyRequest, progress sdk.ProgressFunc) sdk.ApplyResponse {
	say := func(msg string) {
		if progress != nil {
			progress(sdk.Progress{Message: msg, Fraction: -1})
		}
	}
	st := req.Step
	var err error
	var observed *sdk.Fleet
	switch st.Kind {
	case sdk.KindPrefetch:
		if st.Prefetch == nil {
			return fail(fmt.Errorf("step %s: prefetch without its detail", st.ID))
		}
		var n *Node
		if n, err = a.node(ctx, st.Prefetch.Node); err == nil {
			m := st.Prefetch.Model
			var res PrefetchResult
			res, err = n.Prefetch(ctx, Model{Path: m.Path, Source: m.Source, SHA256: m.SHA256, SizeBytes: int64(m.SizeGB * 1e9)}, func(done, total int64) {
				if progress != nil {
					f := -1.0
					if total > 0 {
						f = float64(done) / float64(total)
					}
					progress(sdk.Progress{Message: fmt.Sprintf("%s: %d of %d bytes", m.Path, done, total), Fraction: f})
				}
			})
			if err == nil {
				say(prefetchSummary(m.Path, res))
				observed = &sdk.Fleet{Prefetched: []sdk.Prefetched{{Node: st.Prefetch.Node.Name, Model: m}}}
				a.sweepPartials(ctx, n, say)
			}
		}
	case sdk.KindStart, sdk.KindResidency, sdk.KindDrain, sdk.KindStop:
		if st.Lane == nil {
			return fail(fmt.Errorf("step %s: %s without its lane", st.ID, st.Kind))
		}
		var n *Node
		if n, err = a.node(ctx, st.Lane.Node); err != nil {
			break
		}
		l := a.lane(st.Lane)
		// An on-demand lane is a model of the node's router; the others
		// run as their own process. A step's lane says which one it is
		// about, so a make-before-break change of residency (start the
		// lane as it will be, route, drain and stop it as it was) works
		// on both at once.
		switch {
		case st.Kind == sdk.KindStart && onDemand(st.Lane):
			err = a.changeRouter(ctx, n, st.Lane, true, say)
		case st.Kind == sdk.KindStart:
			err = n.Start(ctx, l, say)
		case st.Kind == sdk.KindResidency:
			err = a.residency(ctx, n, st, l)
		case st.Kind == sdk.KindDrain && onDemand(st.Lane):
			err = a.drainOnDemand(ctx, n, st.Lane, say)
		case st.Kind == sdk.KindDrain:
			err = n.Drain(ctx, l, say)
		case st.Kind == sdk.KindStop && onDemand(st.Lane):
			err = a.changeRouter(ctx, n, st.Lane, false, say)
		case st.Kind == sdk.KindStop:
			err = n.Stop(ctx, l, say)
		}
		if err == nil && (st.Kind == sdk.KindStart || st.Kind == sdk.KindStop) {
			// A process killed before its lane moved or went leaves a
			// pidfile that no step of its own forgets.
			err = n.ForgetGone(ctx, say)
		}
		if err == nil {
			observed = &sdk.Fleet{}
			if st.Kind != sdk.KindStop {
				lane := *st.Lane
				// An on-demand lane loads on its first request.
				lane.Loaded = !onDemand(st.Lane)
				if !onDemand(st.Lane) {
					// The process as it runs now, read on the node.
					lane.Process = n.procs.process(ctx, l)
				}
				observed.Lanes = []sdk.Lane{lane}
			}
		}
	default:
		err = fmt.Errorf("llama does not carry out %s steps", st.Kind)
	}
	if err != nil {
		return fail(err)
	}
	return sdk.ApplyResponse{Observed: observed}
}

func prefetchSummary(path string, r PrefetchResult) string {
	if r.Skipped {
		return path + " is in place with the right sha256"
	}
	return fmt.Sprintf("%s copied: %d bytes sent, resumed at %d", path, r.Sent, r.ResumedAt)
}

// residency changes a lane's residency in place, which poolc plans only
// between keep-warm and preferred: the process stays as it is and its
// metadata records the new residency. A change across on-demand changes
// the process and its port, so the plan makes it make-before-break
// (start, route, drain, stop); a residency step across it is refused.
func (a *Actuator) residency(ctx context.Context, n *Node, st sdk.Step, l Lane) error {
	if st.From == sdk.OnDemand || onDemand(st.Lane) {
		return fmt.Errorf("lane %s: %s to %s changes its process and port, which a residency step does not do: it is planned as start, route, drain and stop", l.Name, st.From, st.Lane.Residency)
	}
	return n.SetResidency(ctx, l)
}

// modelOf is the model a lane loading path serves: the inventory's model
// of that path, else that of the lane's spec (new weights staged at
// another path), with path; only the path when neither is known.
func (a *Actuator) modelOf(lane, path string, specs map[string]sdk.LaneSpec, byPath map[string]sdk.Model) sdk.Model {
	if m, ok := byPath[path]; ok {
		return m
	}
	if spec, ok := specs[lane]; ok {
		for _, m := range a.inventory().Models {
			if m.Name == spec.Model {
				m.Path = path
				return m
			}
		}
	}
	return sdk.Model{Path: path}
}

// fail is a failed step: retryable when the SSH connection failed or a
// drain ran out of time, never for a host key refusal or a wrong digest.
func fail(err error) sdk.ApplyResponse {
	var dte *DrainTimeoutError
	return sdk.ApplyResponse{Retryable: sshx.Retryable(err) || errors.As(err, &dte), Diagnostics: sdk.Errorf(nil, err.Error())}
}

// sweepPartials removes, after a prefetch on node n, the partial downloads
// earlier prefetches left there for model paths the inventory no longer
// has (a path changed while a copy was cut off), and says which. A sweep
// that fails is only said: the prefetch is done.
func (a *Actuator) sweepPartials(ctx context.Context, n *Node, say func(string)) {
	var keep []string
	for _, m := range a.inventory().Models {
		keep = append(keep, m.Path)
	}
	removed, err := n.SweepPartials(ctx, keep)
	if err != nil {
		say(fmt.Sprintf("could not remove stale partial downloads: %v", err))
	}
	for _, p := range removed {
		say(fmt.Sprintf("removed %s, a partial download for a model path the pool no longer has", p))
	}
}

// Observe implements sdk.Actuator: each node's lanes verified live, the
// prefetched models whose recorded sha256 is the model's, and memory. A
// node that cannot be observed is reported unobserved, with the cause;
// drift is a warning.
func (a *Actuator) Observe(ctx context.Context, _ sdk.ObserveRequest) sdk.ObserveResponse {
	a.mu.Lock()
	inv := a.inv
	a.mu.Unlock()
	var resp sdk.ObserveResponse
	paths := make([]string, 0, len(inv.Models))
	byPath := map[string]sdk.Model{}
	for _, m := range inv.Models {
		if _, dup := byPath[m.Path]; !dup && m.Path != "" {
			paths = append(paths, m.Path)
			byPath[m.Path] = m
		}
	}
	specs := map[string]sdk.LaneSpec{}
	for _, l := range inv.Lanes {
		specs[l.Name] = l
	}
	for _, node := range inv.Nodes {
		n, err := a.node(ctx, node)
		var obs Observation
		if err == nil {
			obs, err = n.Observe(ctx, paths)
		}
		if err != nil {
			// Unknown, not down: poolc keeps what it recorded there.
			resp.Fleet.Unobserved = append(resp.Fleet.Unobserved, sdk.Unobserved{Kind: sdk.TargetNode, Name: node.Name, Cause: sdk.CauseOf(err), Detail: err.Error()})
			continue
		}
		resp.Fleet.Nodes = append(resp.Fleet.Nodes, sdk.NodeStatus{Name: node.Name, MemoryTotalGB: float64(obs.MemoryTotal) / 1e9, MemoryFreeGB: float64(obs.MemoryFree) / 1e9})
		for _, d := range obs.Drift {
			resp.Diagnostics = append(resp.Diagnostics, sdk.Diagnostic{Severity: sdk.Warning, Summary: fmt.Sprintf("node %s: %s", node.Name, d)})
		}
		for _, l := range obs.Lanes {
			m := a.modelOf(l.Name, l.Model, specs, byPath)
			// The weights the lane started with, as recorded then (none
			// recorded: not known, which the planner takes as unchanged).
			m.SHA256, m.Source = l.SHA256, l.Source
			// The arguments it runs with, read back from its own command
			// line (a router model's: the one the router reports): a
			// change of the pool's is a replacement. The router reports
			// a model's arguments in its own order and spelling, so the
			// pool's stand when they are the same options.
			if !l.OnDemand || !sameOptions(l.Args, m.Args) {
				m.Args = l.Args
			}
			lane := sdk.Lane{Name: l.Name, Node: node, Model: m, Port: l.Port, Aliases: l.Aliases, Residency: l.Residency, Loaded: l.Loaded,
				Process: &sdk.LaneProcess{PID: l.PID, CommandLine: l.CommandLine, ResidentBytes: l.RSS}}
			if lane.Residency == "" {
				// Metadata from before the residency was recorded: the
				// pool's residency now.
				lane.Residency = specs[l.Name].Residency
			}
			switch {
			case l.OnDemand:
				// A model of the router: on-demand whatever the pool says
				// now, at the lane's own port as the pool declares it
				// (the gateway knows it is reached at the router's).
				lane.Residency = sdk.OnDemand
				if p := specs[l.Name].Port; p > 0 {
					lane.Port = p
				}
			case lane.Residency == sdk.OnDemand:
				// Its own process, which an on-demand lane is not: the
				// plan changes its residency to bring it to the router.
				lane.Residency = sdk.Preferred
			}
			resp.Fleet.Lanes = append(resp.Fleet.Lanes, lane)
		}
		for _, pm := range obs.Models {
			m, ok := byPath[pm.Path]
			if !ok {
				// A staged file (new weights beside a path a process
				// holds): the model of the lane that loads it.
				for _, l := range obs.Lanes {
					if l.Model == pm.Path {
						m = a.modelOf(l.Name, l.Model, specs, byPath)
					}
				}
			}
			if m.Name != "" && pm.SHA256 != "" && (m.SHA256 == "" || pm.SHA256 == m.SHA256) {
				m.SHA256 = pm.SHA256
				resp.Fleet.Prefetched = append(resp.Fleet.Prefetched, sdk.Prefetched{Node: node.Name, Model: m})
			}
		}
	}
	return resp
}
