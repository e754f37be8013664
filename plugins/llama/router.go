package llama

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
)

// RouterLane is the lane name of a node's router: the one llama-server
// per node, in router mode, serving that node's on-demand lanes.
const RouterLane = "poolc-router"

// RouterSpec is a node's router: where it listens, how many models it may
// keep loaded at once, and the on-demand lanes it serves, one preset
// section each.
type RouterSpec struct {
	Host      string
	Port      int
	ModelsMax int
	Models    []RouterModel
}

// RouterModel is one on-demand lane of a router: its name (the preset
// section), model file, aliases, and memory when loaded, which bounds
// --models-max.
type RouterModel struct {
	Name     string   `json:"name"`
	Path     string   `json:"path"`
	Aliases  []string `json:"aliases,omitempty"`
	MemoryGB float64  `json:"memory_gb,omitempty"`
	SHA256   string   `json:"sha256,omitempty"`
	Source   string   `json:"source,omitempty"`
}

// presetPath is where the router's preset lives on the node.
func (n *Node) presetPath() string { return path.Join(n.set.StateDir, RouterLane+".ini") }

// Preset renders the router's models preset: a "[*]" section of defaults
// (no model loads at startup: on-demand lanes load on their first
// request) and one section per lane with its model file and aliases.
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
func (n *Node) routerLane(r RouterSpec) Lane {
	return Lane{Name: RouterLane, Host: r.Host, Port: r.Port, Model: n.presetPath()}
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

// EnsureRouter makes the node's router serve spec: it writes the preset
// and starts the router, or, when a router runs with another preset or
// --models-max, drains and stops it first. A router already serving spec
// is left alone. It waits until /health answers 200 and /v1/models lists
// every alias. A router with no models is stopped.
func (n *Node) EnsureRouter(ctx context.Context, r RouterSpec, progress Progress) error {
	if r.ModelsMax < 1 && len(r.Models) > 0 {
		return fmt.Errorf("router on port %d: --models-max %d leaves no room for a model", r.Port, r.ModelsMax)
	}
	preset, err := r.Preset()
	if err != nil {
		return err
	}
	rl := n.routerLane(r)
	if err := rl.Validate(); err != nil {
		return err
	}
	st, err := n.status(ctx)
	if err != nil {
		return err
	}
	rec, running := st.records[RouterLane]
	running = running && rec.isLane(rl)
	if len(r.Models) == 0 {
		return n.Stop(ctx, rl, progress)
	}
	current, err := n.run(ctx, scriptReadFile, n.presetPath())
	if err != nil {
		return err
	}
	if running && current == preset && strings.Contains(rec.args, " --models-max "+strconv.Itoa(r.ModelsMax)) {
		return n.waitReady(ctx, routerReady(rl, r), rec.pid)
	}
	if running {
		if progress != nil {
			progress("router's models changed: restarting it")
		}
		if err := n.Stop(ctx, rl, progress); err != nil {
			return err
		}
	}
	if _, err := n.host.Run(ctx, shArgv(scriptWriteFile, n.presetPath()), strings.NewReader(preset)); err != nil {
		return fmt.Errorf("writing the router preset on %s: %w", n.host, err)
	}
	argv, err := n.set.routerArgv(rl, r.ModelsMax)
	if err != nil {
		return err
	}
	return n.launchMeta(ctx, routerReady(rl, r), laneMeta{Models: r.Models, ModelsMax: r.ModelsMax}, argv, progress)
}

// RouterServes returns the on-demand lanes the node's router was last
// started with (its record, kept while its pidfile is), nil when none.
func (n *Node) RouterServes(ctx context.Context) ([]RouterModel, error) {
	st, err := n.status(ctx)
	if err != nil {
		return nil, err
	}
	return st.records[RouterLane].meta.Models, nil
}

// DrainRouterModel waits until the router's model name processes and
// holds back no request (its /metrics?model=), or DrainTimeout passes.
// The gateway must already send the lane's aliases elsewhere. A router
// that does not answer has nothing in flight.
func (n *Node) DrainRouterModel(ctx context.Context, r RouterSpec, name string, progress Progress) error {
	rl := n.routerLane(r)
	return n.drainProbe(ctx, name, newProber(n.host, rl).withQuery("model="+url.QueryEscape(name)), progress)
}

// routerReady is the lane whose readiness EnsureRouter waits for: the
// router answering for every alias of its models, serving no single file.
func routerReady(rl Lane, r RouterSpec) Lane {
	for _, m := range r.Models {
		rl.Aliases = append(rl.Aliases, m.Aliases...)
	}
	return rl
}

// routerArgv is the command starting a router: no -m, the preset,
// --models-max and autoload (a request loads its model).
func (s Settings) routerArgv(rl Lane, modelsMax int) ([]string, error) {
	argv, err := s.argv(Lane{Name: rl.Name, Host: rl.Host, Port: rl.Port, Model: rl.Model})
	if err != nil {
		return nil, err
	}
	for i, a := range argv {
		if a == "-m" {
			argv[i] = "--models-preset"
		}
	}
	return append(argv, "--models-max", strconv.Itoa(modelsMax), "--models-autoload"), nil
}

// RouterModelState is one model of a router as GET /models reports it:
// unloaded, loading, loaded, sleeping or failed.
type RouterModelState struct {
	Name    string
	Path    string
	Aliases []string
	State   string
}

// RouterModels returns what the node's router reports of its models.
func (n *Node) RouterModels(ctx context.Context, r RouterSpec) ([]RouterModelState, error) {
	return n.routerModels(ctx, n.routerLane(r))
}

func (n *Node) routerModels(ctx context.Context, rl Lane) ([]RouterModelState, error) {
	p := newProber(n.host, rl)
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
			Path    string   `json:"path"`
			Aliases []string `json:"aliases"`
			Status  struct {
				Value string `json:"value"`
			} `json:"status"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("router GET /models: %v", err)
	}
	var out []RouterModelState
	for _, d := range list.Data {
		out = append(out, RouterModelState{Name: d.ID, Path: d.Path, Aliases: d.Aliases, State: d.Status.Value})
	}
	return out, nil
}
