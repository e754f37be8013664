package llama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/llamastub"
	"poolc.dev/poolc/internal/testing/loadgen"
	"poolc.dev/poolc/plugins/sdk"
)

// routerModel writes a stand-in model and returns it as a router model.
func testRouterModel(t *testing.T, dir, name string, aliases ...string) RouterModel {
	path := filepath.Join(dir, name+".gguf")
	if err := llamastub.WriteModel(path, 200_000); err != nil {
		t.Fatal(err)
	}
	return RouterModel{Name: name, Path: path, Aliases: aliases}
}

// TestRouterTakesLanesInPlaceWhileAnotherStreams: on-demand lanes added,
// changed and removed beside a lane that streams the whole time: the
// router rereads its preset, keeps its process, and the streaming lane
// loses no request.
func TestRouterTakesLanesInPlaceWhileAnotherStreams(t *testing.T) {
	ctx := context.Background()
	n := NewNode(Local{}, testSettings(t))
	dir := t.TempDir()
	busy := testRouterModel(t, dir, "busy", "chat")
	spec := RouterSpec{Host: "127.0.0.1", Port: freePort(t), ModelsMax: 2, Models: []RouterModel{busy}}
	rl := n.router.routerLane(spec)
	stopAtEnd(t, n, rl)
	if err := n.EnsureRouter(ctx, spec, nil); err != nil {
		t.Fatal(err)
	}
	pid := func() int {
		st, err := n.procs.status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.records[RouterLane].pid
	}
	first := pid()
	load := loadgen.Start("http://"+rl.probeAddr(), "chat", 4, 20)
	defer load.Stop()
	if !load.WaitServed(4, 60*time.Second) {
		t.Fatalf("no traffic: %+v", load.Stop())
	}

	var lines []string
	say := func(s string) { lines = append(lines, s) }
	step := func(what string, models ...RouterModel) {
		t.Helper()
		spec.Models = models
		if err := n.EnsureRouter(ctx, spec, say); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := pid(); got != first {
			t.Fatalf("%s restarted the router (pid %d, was %d): %q", what, got, first, lines)
		}
		served := load.Served()
		if !load.WaitServed(served+4, 60*time.Second) {
			t.Fatalf("%s: traffic stopped", what)
		}
	}
	notes := testRouterModel(t, dir, "notes", "notes")
	step("adding notes", busy, notes)
	if err := loadgen.Chat(ctx, http.DefaultClient, "http://"+rl.probeAddr(), "notes", 3); err != nil {
		t.Fatalf("the lane added: %v", err)
	}
	// notes, loaded, gets an alias: drained, unloaded, reloaded.
	notes.Aliases = []string{"notes", "jot"}
	step("an alias for notes", busy, notes)
	if err := loadgen.Chat(ctx, http.DefaultClient, "http://"+rl.probeAddr(), "jot", 3); err != nil {
		t.Fatalf("notes's new alias: %v", err)
	}
	// notes gets other weights under its name.
	step("new weights for notes", busy, testRouterModel(t, dir, "notes-v2", "notes", "jot"))
	step("removing notes", busy)

	res := load.Stop()
	if res.Failed != 0 || res.Served == 0 {
		t.Fatalf("the streaming lane: %d served, %d failed: %v", res.Served, res.Failed, res.Errors)
	}
	t.Logf("the streaming lane: %d served, 0 failed, across four changes of the router's preset", res.Served)
	served, err := n.RouterServes(ctx)
	if err != nil || len(served) != 1 || served[0].Name != "busy" {
		t.Fatalf("the router records %+v %v", served, err)
	}
	if !slices.ContainsFunc(lines, func(s string) bool { return strings.Contains(s, "rereading its preset") }) {
		t.Errorf("progress %q", lines)
	}
}

// TestReloadCheckTellsARouterWithoutReloadAndStaleAliases: a router
// that answers GET /models?reload=1 without a model of the new preset (a
// build from before the reload, which EnsureRouter then restarts) is
// errNoReload; a model listed with other aliases than the preset's (it
// ran through the reload) is stale.
func TestReloadCheckTellsARouterWithoutReloadAndStaleAliases(t *testing.T) {
	_, err := reloadCheck(RouterSpec{Models: []RouterModel{{Name: "a"}, {Name: "b"}}}, []byte(`{"data":[{"id":"a","aliases":[],"status":{"value":"loaded"}}]}`))
	if !errors.Is(err, errNoReload) || !strings.Contains(err.Error(), "does not list b") {
		t.Fatalf("got %v", err)
	}
	stale, err := reloadCheck(RouterSpec{Models: []RouterModel{{Name: "a", Aliases: []string{"x"}}}}, []byte(`{"data":[{"id":"a","aliases":["y"],"status":{"value":"loaded"}}]}`))
	if err != nil || !slices.Equal(stale, []string{"a"}) {
		t.Fatalf("stale %v %v", stale, err)
	}
}

// TestRouterSpecBoundsTheCountOnlyWhenNotAllFit: --models-max is 0 (no
// bound) while every on-demand model fits at once beside the reserved
// lanes, so lanes that come and go leave it as it is; else the count of
// the largest that fit together.
func TestRouterSpecBoundsTheCountOnlyWhenNotAllFit(t *testing.T) {
	ctx := context.Background()
	set := testSettings(t)
	cfg, _ := json.Marshal(map[string]any{"local": true, "llama_server": set.Binary, "state_dir": set.StateDir, "listen_host": "127.0.0.1"})
	node := sdk.Node{Name: "node-a", Address: "127.0.0.1", MemoryGB: 64, BudgetGB: 56}
	act := NewActuator("test")
	if r := act.Configure(ctx, sdk.ConfigureRequest{ConfigJSON: cfg, Inventory: sdk.Inventory{Nodes: []sdk.Node{node}}}); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	n, err := act.node(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sizes []float64
		want  int
	}{{[]float64{20}, 0}, {[]float64{20, 20}, 0}, {[]float64{20, 20, 20}, 2}, {[]float64{50, 10}, 1}} {
		var models []RouterModel
		for i, s := range c.sizes {
			models = append(models, RouterModel{Name: fmt.Sprint("m", i), Path: fmt.Sprint("/m/", i), MemoryGB: s})
		}
		spec, err := act.routerSpec(ctx, node, n, models, "")
		if err != nil || spec.ModelsMax != c.want {
			t.Errorf("models of %v GB in 56 GB: --models-max %d (%v), want %d", c.sizes, spec.ModelsMax, err, c.want)
		}
	}
	if argv := set.routerArgv(Lane{Name: RouterLane, Host: "127.0.0.1", Port: 9000, Model: "/p.ini"}, 0); !strings.Contains(strings.Join(argv, " "), " --models-max 0 ") {
		t.Errorf("argv %q", argv)
	}
}

// FuzzReloadCheck: whatever the router answers to a reload, the check
// returns an error or the stale models, each one of the spec's.
func FuzzReloadCheck(f *testing.F) {
	f.Add(`{"data":[{"id":"a","aliases":["x"],"status":{"value":"loaded"}}]}`)
	f.Add(`{"data":[{"id":"a"},{"id":"a","aliases":null}]}`)
	spec := RouterSpec{Models: []RouterModel{{Name: "a", Aliases: []string{"x"}}, {Name: "b"}}}
	f.Fuzz(func(t *testing.T, body string) {
		stale, err := reloadCheck(spec, []byte(body))
		if err != nil && stale != nil {
			t.Fatalf("stale %v with error %v", stale, err)
		}
		for _, s := range stale {
			if s != "a" && s != "b" {
				t.Fatalf("stale %q is not a model of the spec", s)
			}
		}
	})
}
