package llama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"poolc.dev/poolc/internal/plural"
)

// RouterLane is the lane name of a node's router: the one llama-server
// per node, in router mode, serving that node's on-demand lanes.
const RouterLane = "poolc-router"

// RouterSpec is a node's router: where it listens, how many models it may
// keep loaded at once (ModelsMax, its --models-max: 0 is no bound, as for
// llama-server), and the on-demand lanes it serves, one preset section
// each.
type RouterSpec struct {
	Host      string
	Port      int
	ModelsMax int
	Models    []RouterModel
}

// RouterModel is one on-demand lane of a router: its name (the preset
// section), model file, aliases, llama-server arguments (the section's
// other keys), and memory when loaded, which bounds --models-max.
type RouterModel struct {
	Name     string   `json:"name"`
	Path     string   `json:"path"`
	Aliases  []string `json:"aliases,omitempty"`
	Args     []string `json:"args,omitempty"`
	MemoryGB float64  `json:"memory_gb,omitempty"`
	SHA256   string   `json:"sha256,omitempty"`
	Source   string   `json:"source,omitempty"`
}

// router keeps a node's router serving its on-demand lanes: it writes
// the router's preset, has the running router reread it in place
// (draining and unloading the models whose section changes), restarts it
// when its --models-max changes, and reads back what it serves.
type router struct {
	*session
	procs *processes
	drain *drainer
	sup   *supervisor
	// changes serialises the changes of the node's router (its preset,
	// models and bound): each reads what the router serves and writes it
	// back changed, so two at once would lose one.
	changes sync.Mutex
}

// presetPath is where the router's preset lives on the node.
func (rt *router) presetPath() string { return path.Join(rt.set.StateDir, RouterLane+".ini") }

// Preset renders the router's models preset: a "[*]" section of defaults
// (no model loads at startup: on-demand lanes load on their first
// request) and one section per lane with its model file, aliases and
// arguments (see presetOptions).
func (r RouterSpec) Preset() (string, error) {
	var b strings.Builder
	b.WriteString("; Written by poolc: the on-demand lanes of this node.\n[*]\nload-on-startup = false\n")
	models := append([]RouterModel(nil), r.Models...)
	sort.Slice(models, func(i, j int) bool { return models[i].Name < models[j].Name })
	for _, m := range models {
		l := Lane{Name: m.Name, Port: r.Port, Model: m.Path, Aliases: m.Aliases}
		if err := l.Validate(); err != nil {
			return "", fmt.Errorf("router: %w", err)
		}
		fmt.Fprintf(&b, "\n[%s]\nmodel = %s\n", m.Name, m.Path)
		if len(m.Aliases) > 0 {
			fmt.Fprintf(&b, "alias = %s\n", strings.Join(sortedSet(m.Aliases), ","))
		}
		opts, err := presetOptions(m.Args)
		if err != nil {
			return "", fmt.Errorf("router: lane %s: %w", m.Name, err)
		}
		for _, o := range opts {
			fmt.Fprintf(&b, "%s = %s\n", o.Key, o.Value)
		}
	}
	return b.String(), nil
}

// ModelsMax is the --models-max for a router: the largest count k such
// that the k largest on-demand models fit in room GB together. The router
// evicts by count, blind to memory, and may keep any k models loaded, so
// only the k largest bound what it can use.
func ModelsMax(roomGB float64, onDemandGB []float64) int {
	sizes := append([]float64(nil), onDemandGB...)
	sort.Sort(sort.Reverse(sort.Float64Slice(sizes)))
	sum := 0.0
	for k, s := range sizes {
		if sum+s > roomGB {
			return k
		}
		sum += s
	}
	return len(sizes)
}

// routerLane is the router as a lane: its "model" is the preset file.
func (rt *router) routerLane(r RouterSpec) Lane {
	return Lane{Name: RouterLane, Host: r.Host, Port: r.Port, Model: rt.presetPath()}
}

// scriptReadFile prints file $1, nothing when absent; scriptWriteFile
// replaces file $1 with stdin through a rename.
const (
	scriptReadFile  = `cat "$1" 2>/dev/null || true`
	scriptWriteFile = `set -e
mkdir -p "$(dirname "$1")"
cat > "$1.tmp"
mv -f "$1.tmp" "$1"
`
)

// ensure carries out Node.EnsureRouter.
func (rt *router) ensure(ctx context.Context, r RouterSpec, progress Progress) error {
	if r.ModelsMax < 0 {
		return fmt.Errorf("router on port %d: --models-max %d is negative", r.Port, r.ModelsMax)
	}
	preset, err := r.Preset()
	if err != nil {
		return err
	}
	rl := rt.routerLane(r)
	if err := rl.Validate(); err != nil {
		return err
	}
	st, err := rt.procs.status(ctx)
	if err != nil {
		return err
	}
	rec, running := st.records[RouterLane]
	running = running && rec.isLane(rl)
	if len(r.Models) == 0 {
		return rt.sup.stop(ctx, rl, progress)
	}
	current, err := rt.run(ctx, scriptReadFile, rt.presetPath())
	if err != nil {
		return err
	}
	sameMax := running && rec.modelsMax() == strconv.Itoa(r.ModelsMax)
	switch {
	case sameMax && current == preset && slices.EqualFunc(rec.meta.Models, r.Models, sameRouterModel):
		return rt.sup.waitReady(ctx, routerReady(rl, r), rec.pid)
	case sameMax:
		err := rt.reloadRouter(ctx, rl, r, rec, preset, progress)
		if !errors.Is(err, errNoReload) {
			return err
		}
		if progress != nil {
			progress(err.Error() + ": restarting it")
		}
	case running && progress != nil:
		progress(fmt.Sprintf("router's --models-max changes to %d, which it reads only at startup: restarting it", r.ModelsMax))
	}
	if running {
		if err := rt.sup.stop(ctx, rl, progress); err != nil {
			return err
		}
	}
	if err := rt.writePreset(ctx, preset); err != nil {
		return err
	}
	return rt.sup.launchMeta(ctx, routerReady(rl, r), laneMeta{Models: r.Models, ModelsMax: r.ModelsMax}, rt.set.routerArgv(rl, r.ModelsMax), progress)
}

func (rt *router) writePreset(ctx context.Context, preset string) error {
	if _, err := rt.exec(ctx, rt.set.CommandTimeout, shArgv(scriptWriteFile, rt.presetPath()), strings.NewReader(preset)); err != nil {
		return fmt.Errorf("writing the router preset on %s: %w", rt.host, err)
	}
	return nil
}

// sameRouterModel reports whether two models of a router are one preset
// section with the same weights.
func sameRouterModel(a, b RouterModel) bool {
	return sameSection(a, b) && slices.Equal(sortedSet(a.Aliases), sortedSet(b.Aliases)) &&
		a.SHA256 == b.SHA256 && a.Source == b.Source
}

// sameSection reports whether two models of a router have the same
// preset section, aliases aside: the router keeps a running model whose
// section is unchanged and unloads one whose section changed.
func sameSection(a, b RouterModel) bool {
	return a.Name == b.Name && a.Path == b.Path && sameOptions(a.Args, b.Args)
}

// errNoReload is a router that did not take its new preset on GET
// /models?reload=1 (a llama-server build from before the reload).
var errNoReload = errors.New("the router did not take its new preset on GET /models?reload=1")

// reloadRouter gives the running router rec its new preset in place.
// llama-server's router, on GET /models?reload=1, rereads the preset: a
// running model whose section is gone or changed is unloaded (its
// process told to exit, which cuts its streams), a running model whose
// section is unchanged is left alone, models not running take their new
// sections, new sections are added. Before that, each running model
// whose section goes or changes is drained (DrainTimeout at most: it is
// the lane that is changing). The router compares a running model's
// section without its alias and keeps the aliases it started with, so a
// running model whose aliases changed is then drained, unloaded and
// reloaded to take them. The router's metadata then records the new
// models.
func (rt *router) reloadRouter(ctx context.Context, rl Lane, r RouterSpec, rec record, preset string, progress Progress) error {
	states, err := rt.prober(rl).routerModels(ctx)
	if err != nil {
		return err
	}
	want := map[string]RouterModel{}
	for _, m := range r.Models {
		want[m.Name] = m
	}
	for _, old := range rec.meta.Models {
		if m, ok := want[old.Name]; (!ok || !sameSection(m, old)) && loadedIn(states, old.Name) {
			rt.drainChanging(ctx, r, old.Name, progress)
		}
	}
	if err := rt.writePreset(ctx, preset); err != nil {
		return err
	}
	if progress != nil {
		progress(fmt.Sprintf("router on port %d: rereading its preset (%s), the other models serving on", r.Port, plural.Count(len(r.Models), "model")))
	}
	stale, err := rt.reload(ctx, rl, r)
	if err != nil {
		return err
	}
	if len(stale) > 0 {
		for _, name := range stale {
			rt.drainChanging(ctx, r, name, progress)
			if err := rt.unloadRouterModel(ctx, rl, name); err != nil {
				return err
			}
		}
		if stale, err = rt.reload(ctx, rl, r); err != nil {
			return err
		}
		if len(stale) > 0 {
			return fmt.Errorf("router on port %d: %s still answer to their old aliases after an unload and a reload", r.Port, strings.Join(stale, ", "))
		}
	}
	meta := rec.meta
	meta.Models, meta.ModelsMax, meta.Aliases = r.Models, r.ModelsMax, sortedSet(routerReady(rl, r).Aliases)
	line, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	if _, err := rt.exec(ctx, rt.set.CommandTimeout, shArgv(scriptWriteFile, path.Join(rt.set.StateDir, RouterLane+".json")), strings.NewReader(string(line)+"\n")); err != nil {
		return fmt.Errorf("recording the router's models on %s: %w", rt.host, err)
	}
	return rt.sup.waitReady(ctx, routerReady(rl, r), rec.pid)
}

// reload asks the router to reread its preset and checks it took it:
// every model of r listed. It returns the
// models that still answer to other aliases than r gives them (running
// through the reload, they keep those they started with); errNoReload
// when the router does not list a model r has.
func (rt *router) reload(ctx context.Context, rl Lane, r RouterSpec) ([]string, error) {
	p := rt.prober(rl)
	// The router answers once the models it unloads have exited: each is
	// told to exit and killed after its stop timeout (10 s by default).
	p.client.Timeout = routerExitWait
	code, body, err := p.get(ctx, "/models?reload=1")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("router GET /models?reload=1: %d %s", code, strings.TrimSpace(string(body)))
	}
	return reloadCheck(r, body)
}

// reloadCheck reads the router's answer to a reload, as reload says.
func reloadCheck(r RouterSpec, body []byte) ([]string, error) {
	states, err := parseRouterModels(body)
	if err != nil {
		return nil, err
	}
	listed := map[string]RouterModelState{}
	for _, s := range states {
		listed[s.Name] = s
	}
	var stale []string
	for _, m := range r.Models {
		got, ok := listed[m.Name]
		if !ok {
			return nil, fmt.Errorf("%w (it does not list %s)", errNoReload, m.Name)
		}
		if !slices.Equal(sortedSet(got.Aliases), sortedSet(m.Aliases)) {
			stale = append(stale, m.Name)
		}
	}
	return stale, nil
}

// loadedIn reports whether the router reports model name loaded or
// loading.
func loadedIn(states []RouterModelState, name string) bool {
	for _, s := range states {
		if s.Name == name {
			return s.State == "loaded" || s.State == "loading"
		}
	}
	return false
}

// drainChanging waits for the requests of a router model that is about
// to be unloaded; past DrainTimeout it goes on, saying so: the lane is the
// one changing.
func (rt *router) drainChanging(ctx context.Context, r RouterSpec, name string, progress Progress) {
	if err := rt.drain.routerModel(ctx, rt.routerLane(r), name, progress); err != nil && progress != nil {
		progress(fmt.Sprintf("router model %s: %v; unloading it anyway", name, err))
	}
}

// routerExitWait bounds the wait for a model the router unloads: the
// router tells its process to exit and kills it after the model's stop
// timeout, 10 s unless its preset says otherwise.
const routerExitWait = 2 * time.Minute

// unloadRouterModel unloads a model of the router (POST /models/unload)
// and waits until the router reports it unloaded: the router answers at
// once and the model's process exits after, and a reload before that
// would still find the model running.
func (rt *router) unloadRouterModel(ctx context.Context, rl Lane, name string) error {
	body, _ := json.Marshal(map[string]string{"model": name})
	code, b, err := rt.prober(rl).post(ctx, "/models/unload", body)
	if err != nil {
		return err
	}
	// 400 "model is not running": it stopped meanwhile (evicted), which
	// the wait below sees.
	if code != http.StatusOK && code != http.StatusBadRequest {
		return fmt.Errorf("router POST /models/unload %s: %d %s", name, code, strings.TrimSpace(string(b)))
	}
	ctx, cancel := context.WithTimeout(ctx, routerExitWait)
	defer cancel()
	for {
		states, err := rt.prober(rl).routerModels(ctx)
		if err == nil && !slices.ContainsFunc(states, func(s RouterModelState) bool { return s.Name == name && hasProcess(s.State) }) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("router model %s still runs %s after POST /models/unload", name, routerExitWait)
		case <-time.After(rt.set.Poll):
		}
	}
}

// hasProcess reports whether a router model's state is one with a process:
// loading, loaded or sleeping.
func hasProcess(state string) bool {
	return state == "loading" || state == "loaded" || state == "sleeping"
}

// serves carries out Node.RouterServes.
func (rt *router) serves(ctx context.Context) ([]RouterModel, error) {
	st, err := rt.procs.status(ctx)
	if err != nil {
		return nil, err
	}
	return st.records[RouterLane].meta.Models, nil
}

// routerReady is the lane whose readiness EnsureRouter waits for: the
// router answering for every alias of its models, serving no single file.
func routerReady(rl Lane, r RouterSpec) Lane {
	for _, m := range r.Models {
		rl.Aliases = append(rl.Aliases, m.Aliases...)
	}
	return rl
}

// routerArgv is the server's command for a router: no -m, the preset,
// --models-max and autoload (a request loads its model).
func (s Settings) routerArgv(rl Lane, modelsMax int) []string {
	argv := s.argv(Lane{Name: rl.Name, Host: rl.Host, Port: rl.Port, Model: rl.Model})
	for i, a := range argv {
		if a == "-m" {
			argv[i] = "--models-preset"
		}
	}
	return append(argv, "--models-max", strconv.Itoa(modelsMax), "--models-autoload")
}

// RouterModelState is one model of a router as GET /models reports it:
// unloaded, loading, loaded, sleeping or failed.
type RouterModelState struct {
	Name    string
	Path    string
	Aliases []string
	State   string
	// Args is the command line the router starts the model's process
	// with (status.args).
	Args []string
}

// models carries out Node.RouterModels.
func (rt *router) models(ctx context.Context, r RouterSpec) ([]RouterModelState, error) {
	return rt.prober(rt.routerLane(r)).routerModels(ctx)
}

// routerModels is what the router that p asks reports of its models
// (GET /models).
func (p prober) routerModels(ctx context.Context) ([]RouterModelState, error) {
	code, body, err := p.get(ctx, "/models")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("router GET /models: %d %s", code, strings.TrimSpace(string(body)))
	}
	return parseRouterModels(body)
}

func parseRouterModels(body []byte) ([]RouterModelState, error) {
	var list struct {
		Data []struct {
			ID      string   `json:"id"`
			Aliases []string `json:"aliases"`
			Status  struct {
				Value string   `json:"value"`
				Args  []string `json:"args"`
			} `json:"status"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("router GET /models: %v", err)
	}
	var out []RouterModelState
	for _, d := range list.Data {
		out = append(out, RouterModelState{Name: d.ID, Path: modelArg(d.Status.Args), Aliases: d.Aliases, State: d.Status.Value, Args: d.Status.Args})
	}
	return out, nil
}

// modelArg is the model file in the arguments the router starts a model's
// process with (GET /models names the file nowhere else): the value of -m
// or --model, "" when there is none.
func modelArg(args []string) string {
	for i, a := range args {
		switch {
		case (a == "-m" || a == "--model") && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "--model="):
			return strings.TrimPrefix(a, "--model=")
		}
	}
	return ""
}
