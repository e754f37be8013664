package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/syncbuf"

	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// build builds the Go main package in dir (relative to this package, or
// in another module when modDir is set) into out, and returns out's sha256.
func build(t *testing.T, modDir, pkg, out string) string {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = modDir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// built is testdata/testplugin, built once for all tests.
var built struct {
	once sync.Once
	data []byte
	sum  string
}

// testPlugin puts the test plugin, built from testdata/testplugin, as
// poolc-plugin-test in a new directory, and returns the directory, the
// binary and its sha256.
func testPlugin(t *testing.T) (dir, bin, sum string) {
	t.Helper()
	built.once.Do(func() {
		out := filepath.Join(t.TempDir(), "testplugin")
		built.sum = build(t, ".", "./testdata/testplugin", out)
		built.data, _ = os.ReadFile(out)
	})
	if built.data == nil {
		t.Fatal("the test plugin did not build")
	}
	dir = t.TempDir()
	bin = filepath.Join(dir, host.BinaryName("test"))
	if err := os.WriteFile(bin, built.data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, bin, built.sum
}

// eventually waits for cond, failing the test after 30s: a loaded machine
// is slow to start and stop plugins.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// poolFor is a pool of two nodes, n1 and n2, whose runtime and gateway
// the first declared plugin serves.
func poolFor(decls ...pools.Plugin) *pools.Pool {
	p := &pools.Pool{Name: "lab", Plugins: decls, Gateway: decls[0].Name}
	for _, n := range []string{"n1", "n2"} {
		p.Nodes = append(p.Nodes, pools.Node{Name: n, Address: n + ".lan", Runtime: decls[0].Name})
	}
	return p
}

func start(t *testing.T, decls []pools.Plugin, opts host.Options) *host.Set {
	t.Helper()
	set, ds := host.Start(context.Background(), poolFor(decls...), opts)
	if ds.HasErrors() {
		t.Fatalf("Start: %v", ds.Err())
	}
	t.Cleanup(set.Close)
	return set
}

// TestPluginProcess runs a real plugin process found on the plugin path
// and pinned by its sha256, through every call.
func TestPluginProcess(t *testing.T) {
	dir, bin, sum := testPlugin(t)
	var stderr syncbuf.Buffer
	work := t.TempDir()
	set, ds := host.Start(context.Background(),
		poolFor(pools.Plugin{Name: "test", SHA256: sum, Config: map[string]any{"warn": "loud"}}),
		host.Options{WorkDir: work, PluginPath: []string{t.TempDir(), dir}, Stderr: &stderr})
	if ds.HasErrors() {
		t.Fatalf("Start: %v", ds.Err())
	}
	defer set.Close()
	want := pools.Diagnostics{{Severity: pools.Warning, Code: "plugin", Message: "warn is loud", Path: pools.Path{"plugin", "test", "config", "warn"}}}
	if !reflect.DeepEqual(ds, want) {
		t.Errorf("Start diagnostics = %+v\nwant %+v", ds, want)
	}
	wantInfo := []host.Info{{Name: "test", Version: "0.0.1", Kinds: sdk.AllStepKinds(), Capabilities: sdk.Capabilities{Observes: []string{"lanes"}},
		Targets: []string{`node "n1"`, `node "n2"`, "gateway"}, Path: bin, SHA256: sum}}
	if got := set.Plugins(); !reflect.DeepEqual(got, wantInfo) {
		t.Errorf("Plugins = %+v\nwant %+v", got, wantInfo)
	}
	eventually(t, "the plugin's stderr", func() bool {
		return strings.Contains(stderr.String(), "test: configured for pool lab in "+work+"\n")
	})

	obs, ds := set.Observe(context.Background())
	fleet := pools.Fleet{Routes: []pools.Route{{Alias: "kept", Lane: "cloud"}}}
	drift := obs.Refresh(&fleet)
	if len(ds) != 0 || len(fleet.Lanes) != 1 || fleet.Lanes[0].Name != "chat" || len(fleet.Routes) != 1 ||
		!reflect.DeepEqual(drift, []host.Drift{{Plugin: "test", What: `lane "chat" on "n1" appeared`}}) {
		t.Errorf("Observe = %+v, %v, %v", fleet, drift, ds)
	}

	act, ok := set.Plugin("test")
	if !ok {
		t.Fatal(`Plugin("test") found none`)
	}
	name := "test"
	if _, ok := set.Plugin("other"); ok {
		t.Error(`Plugin("other") found a plugin`)
	}
	var progress []sdk.Progress
	resp := act.Apply(context.Background(), sdk.ApplyRequest{Step: sdk.Step{ID: "start-chat@n1", Kind: sdk.KindStart, Target: "chat"}},
		func(p sdk.Progress) { progress = append(progress, p) })
	if resp.Diagnostics.HasErrors() || !reflect.DeepEqual(progress, []sdk.Progress{{Message: "loading chat", Fraction: 0.5}}) {
		t.Errorf("Apply(start) = %+v, progress %+v", resp, progress)
	}

	resp = act.Apply(context.Background(), sdk.ApplyRequest{Step: sdk.Step{ID: "drain-chat@n1", Kind: sdk.KindDrain}}, nil)
	got := host.Diagnostics(name, resp.Diagnostics)
	wantDrain := pools.Diagnostics{{Severity: pools.Error, Code: "plugin", Message: "endpoint is busy", Path: pools.Path{"plugin", "test", "config", "endpoint"}}}
	if !resp.Retryable || !reflect.DeepEqual(got, wantDrain) {
		t.Errorf("Apply(drain) = %+v, as poolc's: %+v", resp, got)
	}

	// Killed mid-Apply: the plugin exits with status 2 on SIGUSR1.
	resp = applyAndSignal(t, act, syscall.SIGUSR1)
	if len(resp.Diagnostics) != 1 || resp.Diagnostics[0].Summary != "plugin test did not respond: exit status 2" {
		t.Errorf("Apply after the plugin died = %+v", resp)
	}
	// Later calls start the plugin again, so steps that do not depend on
	// the failed one go on.
	if d := act.Describe(context.Background(), sdk.DescribeRequest{}); d.Diagnostics.HasErrors() || d.Name != "test" {
		t.Errorf("Describe after the plugin died = %+v", d)
	}
	if obs, ds := set.Observe(context.Background()); len(ds) != 0 || len(obs.Refresh(&pools.Fleet{})) != 1 {
		t.Errorf("Observe after the plugin died = %+v, %v", obs, ds)
	}
	resp = act.Apply(context.Background(), sdk.ApplyRequest{Step: sdk.Step{ID: "start-chat@n1", Kind: sdk.KindStart, Target: "chat"}}, func(sdk.Progress) {})
	if resp.Diagnostics.HasErrors() {
		t.Errorf("Apply after the restart = %+v", resp)
	}
}

// applyAndSignal applies a stop step, which blocks, and sends sig to the
// plugin's process once it reports its pid.
func applyAndSignal(t *testing.T, act sdk.Actuator, sig syscall.Signal) sdk.ApplyResponse {
	t.Helper()
	pids := make(chan int, 1)
	done := make(chan sdk.ApplyResponse, 1)
	go func() {
		done <- act.Apply(context.Background(), sdk.ApplyRequest{Step: sdk.Step{ID: "stop-chat@n1", Kind: sdk.KindStop}}, func(p sdk.Progress) {
			if pid, ok := strings.CutPrefix(p.Message, "waiting pid "); ok {
				n, _ := strconv.Atoi(pid)
				pids <- n
			}
		})
	}()
	select {
	case pid := <-pids:
		if err := syscall.Kill(pid, sig); err != nil {
			t.Fatal(err)
		}
	case resp := <-done:
		t.Fatalf("Apply(stop) returned before it blocked: %+v", resp)
	case <-time.After(30 * time.Second):
		t.Fatal("Apply(stop) did not report its pid")
	}
	select {
	case resp := <-done:
		return resp
	case <-time.After(30 * time.Second):
		t.Fatal("Apply did not return after the plugin was killed")
	}
	panic("unreachable")
}

func TestPluginKilled(t *testing.T) {
	dir, _, _ := testPlugin(t)
	set := start(t, []pools.Plugin{{Name: "test"}}, host.Options{PluginPath: []string{dir}})
	act, _ := set.Plugin("test")
	resp := applyAndSignal(t, act, syscall.SIGKILL)
	if len(resp.Diagnostics) != 1 || resp.Diagnostics[0].Summary != "plugin test did not respond: signal: killed" || resp.Retryable {
		t.Errorf("Apply after SIGKILL = %+v", resp)
	}
}

func TestApplyCancelled(t *testing.T) {
	dir, _, _ := testPlugin(t)
	set := start(t, []pools.Plugin{{Name: "test"}}, host.Options{PluginPath: []string{dir}})
	act, _ := set.Plugin("test")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "stop-chat@n1", Kind: sdk.KindStop}}, func(sdk.Progress) { cancel() })
	if len(resp.Diagnostics) != 1 || resp.Diagnostics[0].Summary != "plugin test: Apply cancelled" || resp.Retryable {
		t.Errorf("Apply cancelled = %+v", resp)
	}
	// The plugin is still there.
	if d := act.Describe(context.Background(), sdk.DescribeRequest{}); d.Name != "test" {
		t.Errorf("Describe after a cancel = %+v", d)
	}
}

func TestWrongSumRefused(t *testing.T) {
	dir, bin, sum := testPlugin(t)
	wrong := strings.Repeat("ab", 32)
	set, ds := host.Start(context.Background(), poolFor(pools.Plugin{Name: "test", SHA256: wrong}), host.Options{PluginPath: []string{dir}})
	if set != nil || len(ds) != 1 {
		t.Fatalf("Start with a wrong sum = %v, %v", set, ds)
	}
	d := ds[0]
	for _, part := range []string{bin, wrong, sum, "refusing"} {
		if !strings.Contains(d.Message, part) {
			t.Errorf("message %q does not name %s", d.Message, part)
		}
	}
	if !reflect.DeepEqual(d.Path, pools.Path{"plugin", "test", "sha256"}) || d.Severity != pools.Error {
		t.Errorf("diagnostic = %+v", d)
	}
}

func TestConfigureError(t *testing.T) {
	dir, _, _ := testPlugin(t)
	set, ds := host.Start(context.Background(), poolFor(pools.Plugin{Name: "test", Config: map[string]any{"fail": true}}), host.Options{PluginPath: []string{dir}})
	want := pools.Diagnostics{{Severity: pools.Error, Code: "plugin", Message: "fail is set", Path: pools.Path{"plugin", "test", "config", "fail"}}}
	if set != nil || !reflect.DeepEqual(ds, want) {
		t.Errorf("Start = %v, %+v\nwant %+v", set, ds, want)
	}
}

// TestBuiltin runs a built-in plugin as poolc does: Self plugin-serve NAME.
func TestBuiltin(t *testing.T) {
	_, bin, _ := testPlugin(t)
	set := start(t, []pools.Plugin{{Name: "sim", Builtin: true}}, host.Options{Self: []string{bin}})
	if got := set.Plugins(); len(got) != 1 || got[0].Path != bin || got[0].Name != "sim" {
		t.Errorf("Plugins = %+v", got)
	}
	act, _ := set.Plugin("sim")
	if d := act.Describe(context.Background(), sdk.DescribeRequest{}); d.Name != "sim" {
		t.Errorf("the built-in describes itself as %q", d.Name)
	}
	_, ds := host.Start(context.Background(), poolFor(pools.Plugin{Name: "sim", Builtin: true, SHA256: strings.Repeat("0", 64)}), host.Options{Self: []string{bin}})
	if len(ds) != 1 || !strings.Contains(ds[0].Message, "built into poolc") {
		t.Errorf("a pinned built-in = %v", ds)
	}
}

// TestPathRelativeToWorkDir finds a plugin by its declared path; two
// plugins that handle the same kinds serve different targets side by side.
func TestPathRelativeToWorkDir(t *testing.T) {
	dir, _, _ := testPlugin(t)
	work := filepath.Dir(dir)
	rel := filepath.Join(filepath.Base(dir), host.BinaryName("test"))
	pool := poolFor(pools.Plugin{Name: "a", Path: rel}, pools.Plugin{Name: "b", Path: rel})
	pool.Nodes[1].Runtime = "b"
	set, ds := host.Start(context.Background(), pool, host.Options{WorkDir: work})
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	defer set.Close()
	var serves []string
	for _, info := range set.Plugins() {
		serves = append(serves, info.Name+": "+strings.Join(info.Targets, ", "))
	}
	if want := []string{`a: node "n1", gateway`, `b: node "n2"`}; !reflect.DeepEqual(serves, want) {
		t.Errorf("targets = %q, want %q", serves, want)
	}
}

// TestTargetsNeedTheirKinds reports, at the attribute that names the
// plugin, a target whose plugin is not declared or does not handle the
// kinds the target needs.
func TestTargetsNeedTheirKinds(t *testing.T) {
	routesOnly := &observer{kinds: sdk.GatewayKinds}
	env, _ := json.Marshal(map[string]json.RawMessage{"routes": serveDebug(t, "routes", routesOnly)})
	t.Setenv(sdk.ReattachEnv, string(env))
	pool := poolFor(pools.Plugin{Name: "routes"})
	pool.Nodes[1].Runtime = "llama"
	_, ds := host.Start(context.Background(), pool, host.Options{})
	var got []string
	for _, d := range ds {
		if d.Severity == pools.Error {
			got = append(got, d.Path.String()+": "+d.Message)
		}
	}
	want := []string{
		`node.n1.runtime: node "n1" needs a plugin that handles prefetch, start, residency, drain, stop steps, but plugin "routes" does not handle prefetch, start, residency, drain, stop`,
		`node.n2.runtime: node "n2" names plugin "llama", which the pool does not declare; add plugin "llama" { ... } or leave it unset for the built-in "sim"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors = %q\nwant %q", got, want)
	}
}

func TestPluginPath(t *testing.T) {
	dir, _, _ := testPlugin(t)
	work := t.TempDir()
	empty := t.TempDir()
	t.Setenv("POOLC_PLUGIN_PATH", empty+string(filepath.ListSeparator)+dir)
	want := []string{filepath.Join(work, ".poolc", "plugins"), empty, dir}
	if got := host.DefaultPluginPath(work); !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultPluginPath = %q, want %q", got, want)
	}
	set := start(t, []pools.Plugin{{Name: "test"}}, host.Options{WorkDir: work})
	if got := set.Plugins()[0].Path; got != filepath.Join(dir, host.BinaryName("test")) {
		t.Errorf("found %s", got)
	}

	// A bare file name as path, not beside the pool, is found on the
	// plugin path.
	set = start(t, []pools.Plugin{{Name: "bare", Path: host.BinaryName("test")}}, host.Options{WorkDir: work})
	if got := set.Plugins()[0].Path; got != filepath.Join(dir, host.BinaryName("test")) {
		t.Errorf("found %s", got)
	}

	_, ds := host.Start(context.Background(), poolFor(pools.Plugin{Name: "nowhere"}), host.Options{WorkDir: work})
	if len(ds) != 1 || !strings.Contains(ds[0].Message, `plugin "nowhere" not found: no file poolc-plugin-nowhere in `+want[0]+", "+empty+", "+dir) {
		t.Errorf("a missing plugin = %v", ds)
	}
}

// TestNotAPlugin starts a program that exits at once: its stderr reaches
// the user, and the error says how it ended.
func TestNotAPlugin(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, host.BinaryName("broken"))
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho cannot read my config >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stderr syncbuf.Buffer
	set, ds := host.Start(context.Background(), poolFor(pools.Plugin{Name: "broken"}), host.Options{PluginPath: []string{dir}, Stderr: &stderr})
	if set != nil || len(ds) != 1 || ds[0].Message != "plugin broken did not start: exit status 3" {
		t.Errorf("Start = %v, %v", set, ds)
	}
	if got := stderr.String(); got != "broken: cannot read my config\n" {
		t.Errorf("stderr = %q", got)
	}
}

// TestOtherProtocolRefused starts a plugin that speaks protocol version 2
// (its handshake says so), which called an unreachable node down: it is
// refused, saying which version it speaks and which poolc speaks.
func TestOtherProtocolRefused(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, host.BinaryName("old"))
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho '1|2|tcp|127.0.0.1:1|grpc'\nsleep 5\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	set, ds := host.Start(context.Background(), poolFor(pools.Plugin{Name: "old"}), host.Options{PluginPath: []string{dir}})
	want := "plugin old speaks actuator protocol 2, but this poolc speaks protocol 3; rebuild the plugin with a poolc SDK of protocol 3 (see docs/PLUGINS.md)"
	if set != nil || len(ds) != 1 || ds[0].Message != want || !reflect.DeepEqual(ds[0].Path, pools.Path{"plugin", "old"}) {
		t.Errorf("Start = %v, %+v\nwant %q", set, ds, want)
	}
}
