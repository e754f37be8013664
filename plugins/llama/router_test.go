package llama

import (
	"context"
	"net/http"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"poolc.dev/poolc/internal/testing/llamastub"
	"poolc.dev/poolc/internal/testing/loadgen"
)

func TestModelsMaxCountsTheLargestModels(t *testing.T) {
	for _, c := range []struct {
		room  float64
		sizes []float64
		want  int
	}{
		{100, []float64{30, 30, 30}, 3},
		{100, []float64{70, 30, 20}, 2}, // 70+30 fits, 70+30+20 does not
		{60, []float64{70, 10}, 0},      // the largest alone does not fit
		{50, nil, 0},
	} {
		if got := ModelsMax(c.room, c.sizes); got != c.want {
			t.Errorf("ModelsMax(%v, %v) = %d, want %d", c.room, c.sizes, got, c.want)
		}
	}
}

func TestPresetIsSortedAndRefusesBadModels(t *testing.T) {
	p, err := RouterSpec{Port: 9000, ModelsMax: 1, Models: []RouterModel{{Name: "b", Path: "/m/b.gguf", Aliases: []string{"y", "x"}}, {Name: "a", Path: "/m/a.gguf"}}}.Preset()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := llamastub.ParsePreset("p.ini", p)
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed.Models) != 2 || parsed.Models[0].Name != "a" || !reflect.DeepEqual(parsed.Models[1].Aliases, []string{"x", "y"}) || parsed.Models[0].LoadOnStartup {
		t.Errorf("%s\n%+v", p, parsed)
	}
	if _, err := (RouterSpec{Port: 9000, Models: []RouterModel{{Name: "a]\n[b", Path: "/m"}}}).Preset(); err == nil {
		t.Error("a section name that breaks the INI accepted")
	}
	if _, err := (RouterSpec{Port: 9000, Models: []RouterModel{{Name: "a", Path: "/m\nmodel = /etc/x"}}}).Preset(); err == nil {
		t.Error("a path that adds a key accepted")
	}
}

// TestRouterLoadsOnDemandLanesOnFirstRequestAndEvicts: three on-demand
// lanes, room for two: each loads on its first request, the third evicts
// the least recently used, and an unchanged spec leaves the router alone.
func TestRouterLoadsOnDemandLanesOnFirstRequestAndEvicts(t *testing.T) {
	ctx := context.Background()
	n := NewNode(Local{}, testSettings(t))
	dir := t.TempDir()
	spec := RouterSpec{Host: "127.0.0.1", Port: freePort(t), ModelsMax: ModelsMax(64, []float64{30, 30, 30})}
	for _, name := range []string{"vision", "coder", "notes"} {
		path := filepath.Join(dir, name+".gguf")
		if err := llamastub.WriteModel(path, 200_000); err != nil {
			t.Fatal(err)
		}
		spec.Models = append(spec.Models, RouterModel{Name: name, Path: path, Aliases: []string{name + "-alias"}})
	}
	rl := n.router.routerLane(spec)
	stopAtEnd(t, n, rl)
	if err := n.EnsureRouter(ctx, spec, nil); err != nil {
		t.Fatal(err)
	}
	if got := states(t, n, spec); got != "coder=unloaded notes=unloaded vision=unloaded" {
		t.Fatalf("after start: %s", got)
	}
	base := "http://" + rl.probeAddr()
	for _, alias := range []string{"vision-alias", "coder-alias", "notes-alias"} {
		if err := loadgen.Chat(ctx, http.DefaultClient, base, alias, 3); err != nil {
			t.Fatalf("%s: %v", alias, err)
		}
	}
	if got := states(t, n, spec); got != "coder=loaded notes=loaded vision=unloaded" {
		t.Errorf("after three requests with room for two: %s", got)
	}
	obs, err := n.Observe(ctx, nil)
	if err != nil || len(obs.Lanes) != 3 {
		t.Fatalf("%+v %v", obs, err)
	}
	for _, l := range obs.Lanes {
		if !l.OnDemand || l.Loaded != (l.Name != "vision") {
			t.Errorf("observed %+v", l)
		}
	}
	pid := obs.Lanes[0].PID

	// The same spec: the router keeps running.
	if err := n.EnsureRouter(ctx, spec, nil); err != nil {
		t.Fatal(err)
	}
	if obs, _ := n.Observe(ctx, nil); obs.Lanes[0].PID != pid {
		t.Errorf("an unchanged router was restarted")
	}
	// One lane fewer, the same --models-max: the router rereads its
	// preset in place.
	var lines []string
	spec.Models = spec.Models[:2]
	if err := n.EnsureRouter(ctx, spec, func(s string) { lines = append(lines, s) }); err != nil {
		t.Fatal(err)
	}
	obs, _ = n.Observe(ctx, nil)
	if len(obs.Lanes) != 2 || obs.Lanes[0].PID != pid || !strings.Contains(strings.Join(lines, "\n"), "rereading its preset") {
		t.Errorf("after removing a lane: %+v %q", obs.Lanes, lines)
	}
	// Another --models-max, which the router reads only at startup: a
	// new process.
	lines = nil
	spec.ModelsMax = 1
	if err := n.EnsureRouter(ctx, spec, func(s string) { lines = append(lines, s) }); err != nil {
		t.Fatal(err)
	}
	obs, _ = n.Observe(ctx, nil)
	if len(obs.Lanes) != 2 || obs.Lanes[0].PID == pid || !strings.Contains(strings.Join(lines, "\n"), "restarting") {
		t.Errorf("after changing --models-max: %+v %q", obs.Lanes, lines)
	}
}

func states(t *testing.T, n *Node, spec RouterSpec) string {
	t.Helper()
	ms, err := n.RouterModels(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Name+"="+m.State)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
