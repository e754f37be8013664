//go:build e2e

package haproxy

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/llamastub"
	"poolc.dev/poolc/internal/testing/loadgen"
	"poolc.dev/poolc/plugins/llama"
)

// lanes is two "nodes" on this machine (each its own state directory)
// running llama-server stand-ins.
type lanes struct {
	t     *testing.T
	bin   string
	nodes map[string]*llama.Node
}

func newLanes(t *testing.T) *lanes {
	bin, err := llamastub.ServerBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &lanes{t: t, bin: bin, nodes: map[string]*llama.Node{}}
}

func (ls *lanes) node(name string) *llama.Node {
	if n := ls.nodes[name]; n != nil {
		return n
	}
	n := llama.NewNode(llama.Local{}, llama.Settings{
		Binary:   ls.bin,
		StateDir: filepath.Join(ls.t.TempDir(), name),
		Env: map[string]string{
			llamastub.EnvLoadRate:      "20000000",
			llamastub.EnvTokenInterval: "10ms",
		},
		StartBase: 30 * time.Second, DrainTimeout: 30 * time.Second, StopGrace: 5 * time.Second, Poll: 20 * time.Millisecond,
	})
	ls.nodes[name] = n
	return n
}

// start runs lane name on node with aliases and stops it when the test ends.
func (ls *lanes) start(node, name string, aliases ...string) llama.Lane {
	t := ls.t
	t.Helper()
	model := filepath.Join(t.TempDir(), name+".gguf")
	if err := llamastub.WriteModel(model, 2_000_000); err != nil {
		t.Fatal(err)
	}
	l := llama.Lane{Name: name, Host: "127.0.0.1", Port: freePort(t), Model: model, Aliases: aliases, SizeBytes: 2_000_000}
	n := ls.node(node)
	if err := n.Start(context.Background(), l, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(context.Background(), l, nil) })
	return l
}

func (ls *lanes) stop(node string, l llama.Lane) {
	ls.t.Helper()
	if err := ls.nodes[node].Stop(context.Background(), l, nil); err != nil {
		ls.t.Fatal(err)
	}
}

func endpoint(node string, l llama.Lane) *Endpoint {
	return &Endpoint{Lane: l.Name, Node: node, Addr: l.Host, Port: l.Port}
}

// TestE2EFlipsUnderLiveTrafficFailNoRequest moves alias "chat" under a
// streaming load: first its lane to another node (a second server of the
// lane's backend), then to another lane (the map), each followed by the
// make-before-break stop of the lane left behind. Not one request may fail
// or be cut. A last break-before-make stop shows the load does see cuts.
func TestE2EFlipsUnderLiveTrafficFailNoRequest(t *testing.T) {
	ctx := context.Background()
	ls := newLanes(t)
	a := ls.start("node-a", "cognition", "chat")
	b := ls.start("node-b", "cognition", "chat")
	c := ls.start("node-c", "scribe", "chat")
	spec := testSpec(t,
		[]LaneBackend{{Lane: "cognition", Addr: a.Host, Port: a.Port}, {Lane: "scribe"}},
		[]AliasRoute{{Alias: "chat", Lane: "cognition"}})
	p := startProxy(t, spec)
	g := p.gateway(t)

	load := loadgen.Start(p.base(), "chat", 8, 10)
	phase := func(what string) {
		if !load.WaitServed(40, time.Minute) {
			t.Fatalf("%s: traffic stalled at %d served, %d failed", what, load.Served(), load.Failed())
		}
	}
	phase("on node-a")

	// The lane moves from node-a to node-b.
	start := time.Now()
	var lines []string
	if err := g.Route(ctx, "chat", endpoint("node-b", b), func(s string) { lines = append(lines, s) }); err != nil {
		t.Fatal(err)
	}
	moveTook := time.Since(start)
	ls.stop("node-a", a)
	phase("on node-b")

	// The alias moves to another lane.
	start = time.Now()
	if err := g.Route(ctx, "chat", endpoint("node-c", c), nil); err != nil {
		t.Fatal(err)
	}
	flipTook := time.Since(start)
	ls.stop("node-b", b)
	phase("on scribe")
	res := load.Stop()
	t.Logf("served %d requests, %d failed, in %s; lane move route step %s, lane flip %s; progress %q",
		res.Served, res.Failed, res.Duration.Round(time.Millisecond), moveTook.Round(time.Millisecond), flipTook.Round(time.Millisecond), lines)
	if res.Failed != 0 {
		t.Fatalf("%d of %d requests failed or were cut: %q", res.Failed, res.Served+res.Failed, res.Errors)
	}

	obs, err := g.Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 1 || obs[0].Alias != "chat" || obs[0].Lane != "scribe" || len(obs[0].Endpoints) != 1 || obs[0].Endpoints[0].Port != c.Port || obs[0].Endpoints[0].Node != "node-c" {
		t.Fatalf("observed %+v", obs)
	}
	// The files keep the routes: a restarted haproxy serves scribe.
	if m, _ := os.ReadFile(spec.MapFile); string(m) != "chat lane_scribe\n" {
		t.Errorf("map file %q", m)
	}
	p.restart(t)
	if obs2, err := g.Observe(ctx); err != nil || len(obs2) != 1 || len(obs2[0].Endpoints) != 1 || obs2[0].Endpoints[0] != obs[0].Endpoints[0] {
		t.Errorf("after a restart: %+v %v", obs2, err)
	}
	if err := loadgen.Chat(ctx, http.DefaultClient, p.base(), "chat", 5); err != nil {
		t.Errorf("a request after the restart: %v", err)
	}

	// Break before make: SIGTERM the serving lane under load. The load
	// generator must see the cut streams, or the zero above proves nothing.
	load = loadgen.Start(p.base(), "chat", 8, 50)
	phase("before the break")
	obsLanes, err := ls.nodes["node-c"].Observe(ctx, nil)
	if err != nil || len(obsLanes.Lanes) != 1 {
		t.Fatalf("%+v %v", obsLanes, err)
	}
	syscall.Kill(obsLanes.Lanes[0].PID, syscall.SIGTERM)
	// Wait for the first cut stream: after a fixed half second, a lane
	// that a loaded machine had not yet let handle the signal finished
	// its streams whole once the load stopped, and nothing failed.
	for deadline := time.Now().Add(30 * time.Second); load.Failed() == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cut := load.Stop()
	t.Logf("break before make: %d failed, %d served; first: %q", cut.Failed, cut.Served, first(cut.Errors))
	if cut.Failed == 0 {
		t.Error("SIGTERM of the serving lane failed no request: the load generator does not see cuts")
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return strings.TrimSpace(s[0])
}
