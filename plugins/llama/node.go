package llama

import "context"

// Node runs and observes the lanes of one machine. It is a composition
// of components, one purpose each, over one host session (session.go):
// the processes and their pidfiles (processes.go), the model files
// (prefetch.go), the drain (drain.go), the lanes' own processes under
// their service manager (supervisor.go), the node's router (router.go)
// and the observation (observe.go). Its methods are what the actuator
// calls.
type Node struct {
	session *session
	procs   *processes
	files   *modelFiles
	drain   *drainer
	sup     *supervisor
	router  *router
	obs     *observer
}

// NewNode returns the lanes of host, run as settings say.
func NewNode(host Host, settings Settings) *Node {
	s := &session{host: host, set: settings.withDefaults()}
	n := &Node{session: s, procs: &processes{s}, files: &modelFiles{s}}
	n.drain = &drainer{s, n.procs}
	n.sup = &supervisor{s, n.procs, n.drain}
	n.router = &router{session: s, procs: n.procs, drain: n.drain, sup: n.sup}
	n.obs = &observer{s, n.procs, n.files}
	return n
}

// Progress receives a line about a step as it goes.
type Progress func(msg string)

// Prefetch brings the model to its path on the node: a file already there
// with the right sha256 is kept; otherwise the source is copied to
// PATH.part (resuming what an interrupted copy left there: the node
// downloads with a Range request, a local file is sent from the size of
// the node's PATH.part on, nothing before it again), checked against the
// sha256 (a mismatch deletes the copy and leaves the path as it was) and
// renamed to the path. Free disk is checked first.
func (n *Node) Prefetch(ctx context.Context, m Model, progress BytesProgress) (PrefetchResult, error) {
	return n.files.prefetch(ctx, m, progress)
}

// SweepPartials removes the partial downloads a prefetch left on the node
// (a copy cut off) whose model path is not among keep: the model moved or
// left, so no prefetch would resume or remove them. It returns the files
// removed.
func (n *Node) SweepPartials(ctx context.Context, keep []string) ([]string, error) {
	return n.files.sweepPartials(ctx, keep)
}

// Start runs the lane unless it already runs, and waits until /health
// answers 200 (503 means still loading), /props serves the lane's model
// and /v1/models lists every alias. A lane whose process exits while
// loading fails with the end of its log; a lane whose pidfile names a live
// process serving another model is refused, never started twice.
func (n *Node) Start(ctx context.Context, l Lane, progress Progress) error {
	return n.sup.start(ctx, l, progress)
}

// SetResidency records l.Residency in the metadata of lane l's running
// process, which a residency change between keep-warm and preferred
// leaves as it is; a lane that does not run is an error.
func (n *Node) SetResidency(ctx context.Context, l Lane) error {
	return n.sup.setResidency(ctx, l)
}

// Drain waits until the lane processes no request and holds none back
// (no slot is_processing, no deferred request), or DrainTimeout passes.
// llama-server does not drain by itself, so the gateway must already send
// the lane's aliases elsewhere. A probe that fails, times out or answers
// what does not parse says nothing: the lane is busy, unknown, and the
// drain probes again. Only a lane whose recorded process is gone, or
// alive with its port closed (told to stop), has nothing in flight
// without saying so. The router (RouterLane) answers
// /slots and /metrics only for a model named in the query, so its drain
// sums the probes of every model it reports loaded or loading.
func (n *Node) Drain(ctx context.Context, l Lane, progress Progress) error {
	return n.drain.drain(ctx, l, progress)
}

// DrainRouterModel waits until the router's model name processes and
// holds back no request, or DrainTimeout passes, as Drain does. The
// probe never loads the model (autoload=false): a model the router does
// not run answers 400 "model is not loaded", which is idle. The gateway
// must already send the lane's aliases elsewhere.
func (n *Node) DrainRouterModel(ctx context.Context, r RouterSpec, name string, progress Progress) error {
	return n.drain.routerModel(ctx, n.router.routerLane(r), name, progress)
}

// Stop drains the lane, then sends SIGTERM and, if it has not exited
// after StopGrace, SIGKILL (a lane run as a unit: its service manager
// stops the unit so, and poolc removes the unit), and forgets its
// pidfile. A lane that is gone already stops at once; a pidfile whose process is not the lane (gone,
// or the pid reused by another program) is forgotten without signalling
// anything. A drain that times out does not prevent the stop: it is
// reported and the remaining requests are cut.
func (n *Node) Stop(ctx context.Context, l Lane, progress Progress) error {
	return n.sup.stop(ctx, l, progress)
}

// ForgetGone forgets every pidfile of the node whose process is gone,
// lane or router: a process killed before its lane moved (to another
// port or node, or into the router) or went leaves one that no stop step
// forgets, since the observation does not report it as a lane. Each is
// forgotten under its lane's start lock, so a start writing it is never
// undone; live processes are left alone.
func (n *Node) ForgetGone(ctx context.Context, progress Progress) error {
	return n.procs.forgetGone(ctx, progress)
}

// EnsureRouter makes the node's router serve spec. A router already
// running with spec's --models-max takes a changed preset in place: poolc
// rewrites the preset and asks GET /models?reload=1, on which
// llama-server's router rereads it, leaving every running model whose
// section is unchanged serving (see reloadRouter); the node's other
// on-demand lanes lose no request. Only a change of --models-max, which
// the router reads at startup alone, or a router that does not take the
// reload, restarts it: drained, stopped, started with the new preset. A
// router already serving spec is left alone. It waits until /health
// answers 200 and /v1/models lists every alias. A router with no models
// is stopped.
func (n *Node) EnsureRouter(ctx context.Context, r RouterSpec, progress Progress) error {
	return n.router.ensure(ctx, r, progress)
}

// RouterServes returns the on-demand lanes the node's router was last
// started with (its record, kept while its pidfile is), nil when none.
func (n *Node) RouterServes(ctx context.Context) ([]RouterModel, error) {
	return n.router.serves(ctx)
}

// RouterModels returns what the node's router reports of its models.
func (n *Node) RouterModels(ctx context.Context, r RouterSpec) ([]RouterModelState, error) {
	return n.router.models(ctx, r)
}

// Observe reports the node's lanes and, for each model path asked about,
// whether the file is there (size, and the sha256 recorded when it was
// prefetched).
func (n *Node) Observe(ctx context.Context, models []string) (Observation, error) {
	return n.obs.observe(ctx, models)
}
