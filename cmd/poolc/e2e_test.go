package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/poolctest"
	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/plugins/simactuator"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
	"poolc.dev/poolc/runner/store"
)

// These tests drive the real poolc binary, as CI and operators do; the
// slower groups of them are the packages under tests/.

// Two applies at once: while the first holds the lock, the second fails
// at once with the first one's lock info; with --lock-timeout, it waits
// for the first and finds its work done.
func TestTwoAppliesNeverRunAtOnce(t *testing.T) {
	bin := poolctest.Binary(t)
	dir := poolctest.SparkLab(t, t.TempDir(), 0.02)
	first, firstOut := poolctest.StartApply(t, bin, dir)
	t.Cleanup(func() { first.Process.Signal(syscall.SIGCONT) })
	lock := filepath.Join(dir, "poolc.state.json.lock")
	for deadline := time.Now().Add(poolctest.WaitLimit); ; time.Sleep(10 * time.Millisecond) {
		var info store.LockInfo
		if data, err := os.ReadFile(lock); err == nil && json.Unmarshal(data, &info) == nil && info.PID == first.Process.Pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first apply never took the lock:\n%s", firstOut)
		}
	}
	// Stopped (SIGSTOP), the first apply holds the lock whenever the
	// second one looks, however loaded the machine.
	if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	second, secondOut := poolctest.StartApply(t, bin, dir)
	// It ends although the holder never lets go: it did not wait.
	err := poolctest.WaitOrDump(t, second, secondOut, poolctest.WaitLimit)
	if out := secondOut.String(); err == nil || !strings.Contains(out, "is locked: ID ") || !strings.Contains(out, "for apply since") {
		t.Fatalf("second apply: %v\n%s", err, out)
	}
	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	out, err := poolctest.Run(t, bin, "apply", "--auto-approve", "--lock-timeout", "60s", dir)
	if err != nil {
		t.Fatalf("waiting apply: %v\n%s", err, out)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first apply: %v\n%s", err, firstOut)
	}
	if !strings.Contains(out, "No changes.") {
		t.Errorf("the waiting apply should find the first one's work done:\n%s", out)
	}
}

// BenchmarkApplyThroughPlugin applies independent no-op steps (routes to
// the cloud) through the sim actuator running out of process, ten at a
// time, and reports steps per second, the time each step takes, and the
// CPU time poolc and the plugin spend on each (cpu-µs/step, from /proc). The
// state is kept in memory; BenchmarkApplyThroughPluginToStateFile writes
// it to a state file as apply does.
func BenchmarkApplyThroughPlugin(b *testing.B) {
	benchmarkApply(b, func(*testing.B) runner.Recorder { return discard{} })
}

// BenchmarkApplyThroughPluginToStateFile is BenchmarkApplyThroughPlugin
// with the state written to a file (atomically, fsynced, coalesced) and
// every step journaled.
func BenchmarkApplyThroughPluginToStateFile(b *testing.B) {
	benchmarkApply(b, func(b *testing.B) runner.Recorder {
		st := store.Open(filepath.Join(b.TempDir(), "poolc.state.json"))
		j, err := st.BeginJournal("bench")
		if err != nil {
			b.Fatal(err)
		}
		return runner.NewStoreRecorder(j, &pools.State{})
	})
}

func benchmarkApply(b *testing.B, recorder func(*testing.B) runner.Recorder) {
	bin := poolctest.Binary(b)
	const steps = 10000
	ctx := context.Background()
	pool := &pools.Pool{Name: "bench", Plugins: []pools.Plugin{{Name: "sim", Builtin: true, Config: map[string]any{"world": ":memory:"}}}}
	set, diags := host.Start(ctx, pool, host.Options{WorkDir: b.TempDir(), Self: []string{bin}, Stderr: os.Stderr})
	if diags.HasErrors() {
		b.Fatal(diags.Err())
	}
	defer set.Close()
	plan := &pools.Plan{}
	for i := range steps {
		alias := fmt.Sprintf("alias-%05d", i)
		plan.Steps = append(plan.Steps, pools.Step{ID: "route:" + alias, Kind: pools.StepRoute, Target: alias,
			Route: &pools.Route{Alias: alias, Lane: pools.Cloud}, DependsOn: []string{}})
	}
	b.ResetTimer()
	var elapsed, cpu time.Duration
	cpuKnown := true
	for range b.N {
		st := &pools.State{FormatVersion: 1}
		st.Normalize()
		rec := recorder(b)
		cpu0, ok0 := treeCPU()
		begin := time.Now()
		res := runner.Run(ctx, plan, st, set.Steps(&st.Fleet), rec, runner.Options{Parallelism: 10})
		elapsed += time.Since(begin)
		cpu1, ok1 := treeCPU()
		cpu, cpuKnown = cpu+cpu1-cpu0, cpuKnown && ok0 && ok1
		if !res.OK() {
			b.Fatalf("%d of %d steps done", res.Count(runner.Done), steps)
		}
	}
	perStep := elapsed / time.Duration(b.N*steps)
	b.ReportMetric(float64(b.N*steps)/elapsed.Seconds(), "steps/s")
	b.ReportMetric(float64(perStep.Microseconds()), "µs/step")
	if cpuKnown {
		// The CPU of poolc and the plugin process for each step: what
		// the steps cost, whatever else the machine runs.
		b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N*steps), "cpu-µs/step")
	}
}

type discard struct{}

func (discard) WriteState(*pools.State, int) error  { return nil }
func (discard) Journal(journal.Record) func() error { return func() error { return nil } }

// Two runtime plugins side by side, end to end: node a runs its lanes
// through the example webhook plugin (built from its own module, pinned by
// its sha256, against a local HTTP server), node b and the gateway through
// the built-in sim. Each plugin receives only its targets' steps, and the
// pool converges.
func TestApplyThroughTheWebhookPlugin(t *testing.T) {
	bin := poolctest.Binary(t)
	dir := t.TempDir()
	plugin := poolctest.InstallPlugin(t, dir, "webhook", "examples/plugins/webhook")
	data, err := os.ReadFile(plugin)
	if err != nil {
		t.Fatal(err)
	}
	sum := fmt.Sprintf("%x", sha256.Sum256(data))

	var mu sync.Mutex
	var received []sdk.Step
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var s sdk.Step
		if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		received = append(received, s)
		mu.Unlock()
		fmt.Fprintln(w, "ok")
	}))
	defer server.Close()

	pool := func(pin string) string {
		return fmt.Sprintf(`pool "hooked" {
  node "a" {
    address   = "a.lan"
    memory_gb = 64
    runtime   = "webhook"
  }
  node "b" {
    address   = "b.lan"
    memory_gb = 64
  }
  model "m" {
    path      = "/models/m.gguf"
    size_gb   = 2
    memory_gb = 4
  }
  lane "chat" {
    model     = "m"
    residency = "keep-warm"
    aliases   = ["chat"]
    placement = ["a"]
    port      = 8080
  }
  lane "embed" {
    model     = "m"
    residency = "keep-warm"
    aliases   = ["embed"]
    placement = ["b"]
    port      = 8081
  }
  plugin "webhook" {
    sha256 = %q
    config = {
      url = %q
    }
  }
}
`, pin, server.URL)
	}
	cfgPath := filepath.Join(dir, "pool.hcl")
	if err := os.WriteFile(cfgPath, []byte(pool(sum)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := poolctest.Run(t, bin, "apply", "--auto-approve", dir)
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	mu.Lock()
	var ids []string
	for _, s := range received {
		ids = append(ids, s.ID)
		if n := s.Lane; n != nil && (n.Node.Address != "a.lan" || n.Node.SSHPort != pools.DefaultSSHPort || n.Model.Path != "/models/m.gguf") {
			t.Errorf("the webhook got a lane without its node's endpoint or model: %+v", n)
		}
	}
	mu.Unlock()
	slices.Sort(ids)
	if want := []string{"prefetch:m@a", "start:chat@a"}; !slices.Equal(ids, want) {
		t.Fatalf("the webhook received %q, want only node a's steps %q\n%s", ids, want, out)
	}
	world, _, err := simactuator.OpenWorld(filepath.Join(dir, ".poolc", "sim-world.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(world.Fleet.Lanes) != 1 || world.Fleet.Lanes[0].Node != "b" || len(world.Fleet.Routes) != 2 {
		t.Fatalf("the sim's world holds %+v; want only node b's lane and both routes", world.Fleet)
	}
	// The plugin's binary lies beside the pool: plan and plugins run it
	// only when told to (apply does without asking).
	if plan, err := poolctest.Run(t, bin, "plan", "--allow-unpinned", "--detailed-exitcode", dir); err != nil {
		t.Fatalf("the plan after the apply is not empty: %v\n%s", err, plan)
	}
	if list, _ := poolctest.Run(t, bin, "plugins", "--allow-unpinned", dir); !regexp.MustCompile(`(?m)^webhook +declared, pinned`).MatchString(list) || !strings.Contains(list, sum) ||
		!strings.Contains(list, `node "b", gateway`) {
		t.Errorf("poolc plugins:\n%s", list)
	}

	// A binary that is not the one pinned is refused.
	wrong := strings.Repeat("0", 64)
	os.WriteFile(cfgPath, []byte(pool(wrong)), 0o644)
	out, err = poolctest.Run(t, bin, "apply", "--auto-approve", dir)
	if err == nil || !strings.Contains(out, wrong) || !strings.Contains(out, sum) || !strings.Contains(out, "pool.hcl:") {
		t.Fatalf("a wrong pin was not refused with both sums and the config's place: %v\n%s", err, out)
	}
}
