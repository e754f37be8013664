package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/plugins/sim"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
	"poolc.dev/poolc/runner/store"
)

// These tests drive the real poolc binary, as CI and operators do.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// poolcBinary builds poolc once per test run.
func poolcBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "poolc-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "poolc")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// slowSparkLab writes the example pool into dir with the sim taking
// real time (timeScale of simulated seconds), and returns the pool's path.
func slowSparkLab(t *testing.T, dir string, timeScale float64) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/spark-lab/spark-lab.hcl")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(src), "  plugin \"sim\" {\n    builtin = true\n  }",
		fmt.Sprintf("  plugin \"sim\" {\n    builtin = true\n    config = {\n      time_scale = %g\n    }\n  }", timeScale), 1)
	if cfg == string(src) {
		t.Fatal("the example's sim plugin block changed; update this test")
	}
	if err := os.WriteFile(filepath.Join(dir, "spark-lab.hcl"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func run(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// checkWorld asserts what the hardware must never see: a lane started
// twice, an alias routed to a lane that is not running.
func checkWorld(t *testing.T, dir, when string) sim.World {
	t.Helper()
	w, err := sim.ReadWorld(filepath.Join(dir, ".poolc", "sim-world.json"))
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	if len(w.Violations) > 0 {
		t.Fatalf("%s: the sim saw violations: %v", when, w.Violations)
	}
	for key, n := range w.Starts {
		if n > 1 {
			t.Fatalf("%s: lane %s was started %d times", when, key, n)
		}
	}
	for _, r := range w.Fleet.Routes {
		if r.Lane != pools.Cloud && w.Fleet.Lane(r.Lane, r.Node) == nil {
			t.Fatalf("%s: alias %s routes to %s@%s, which is not running", when, r.Alias, r.Lane, r.Node)
		}
	}
	return w
}

// Kill poolc with SIGKILL at a random point of an apply, many times: the
// state file always parses, applying again converges, no lane is ever
// started twice and no alias points at a lane that is not running.
func TestAKilledApplyLosesNothing(t *testing.T) {
	bin := poolcBinary(t)
	r := rand.New(rand.NewPCG(2026, 11))
	const trials = 20
	killedMidway := 0
	for trial := range trials {
		dir := slowSparkLab(t, t.TempDir(), 0.004)
		cmd := exec.Command(bin, "apply", "--auto-approve", dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(r.IntN(900)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled() {
			killedMidway++
		}
		time.Sleep(50 * time.Millisecond) // the plugin dies with poolc (Pdeathsig)

		when := fmt.Sprintf("trial %d, after the kill", trial)
		if data, err := os.ReadFile(filepath.Join(dir, "poolc.state.json")); err == nil {
			if _, err := pools.ParseState("state", data); err != nil {
				t.Fatalf("%s: the state does not parse: %v", when, err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, ".poolc", "sim-world.json")); err == nil {
			checkWorld(t, dir, when)
		}
		again, err := run(t, bin, "apply", "--auto-approve", dir)
		if err != nil {
			t.Fatalf("trial %d: applying again: %v\n%s\nkilled run:\n%s", trial, err, again, out.String())
		}
		checkWorld(t, dir, fmt.Sprintf("trial %d, after applying again", trial))
		if plan, err := run(t, bin, "plan", "--detailed-exitcode", dir); err != nil {
			t.Fatalf("trial %d: the plan after converging is not empty: %v\n%s", trial, err, plan)
		}
	}
	if killedMidway < trials/2 {
		t.Errorf("only %d of %d trials were killed mid-apply; the apply is too fast for this test", killedMidway, trials)
	}
}

// Two applies at once: the second fails fast with the first one's lock
// info, or waits for it with --lock-timeout.
func TestTwoAppliesNeverRunAtOnce(t *testing.T) {
	bin := poolcBinary(t)
	dir := slowSparkLab(t, t.TempDir(), 0.02)
	first := exec.Command(bin, "apply", "--auto-approve", dir)
	var firstOut bytes.Buffer
	first.Stdout, first.Stderr = &firstOut, &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, "poolc.state.json.lock")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(lock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first apply never took the lock")
		}
	}
	begin := time.Now()
	out, err := run(t, bin, "apply", "--auto-approve", dir)
	if err == nil || !strings.Contains(out, "is locked: ID ") || !strings.Contains(out, "for apply since") {
		t.Fatalf("second apply: %v\n%s", err, out)
	}
	if took := time.Since(begin); took > 3*time.Second {
		t.Errorf("the second apply took %v to fail; it should fail fast", took)
	}
	out, err = run(t, bin, "apply", "--auto-approve", "--lock-timeout", "60s", dir)
	if err != nil {
		t.Fatalf("waiting apply: %v\n%s", err, out)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first apply: %v\n%s", err, firstOut.String())
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
		j, err := st.StartJournal("bench")
		if err != nil {
			b.Fatal(err)
		}
		return runner.NewStoreRecorder(j, &pools.State{})
	})
}

func benchmarkApply(b *testing.B, recorder func(*testing.B) runner.Recorder) {
	bin := poolcBinary(b)
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

func (discard) WriteState(*pools.State, int) error { return nil }
func (discard) Journal(store.Record) func() error  { return func() error { return nil } }

// Two runtime plugins side by side, end to end: node a runs its lanes
// through the example webhook plugin (built from its own module, pinned by
// its sha256, against a local HTTP server), node b and the gateway through
// the built-in sim. Each plugin receives only its targets' steps, and the
// pool converges.
func TestApplyThroughTheWebhookPlugin(t *testing.T) {
	bin := poolcBinary(t)
	dir := t.TempDir()
	pluginDir := filepath.Join(dir, ".poolc", "plugins")
	plugin := filepath.Join(pluginDir, "poolc-plugin-webhook")
	build := exec.Command("go", "build", "-o", plugin, ".")
	build.Dir = "../../examples/plugins/webhook"
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the webhook plugin: %v\n%s", err, out)
	}
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
	out, err := run(t, bin, "apply", "--auto-approve", dir)
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
	world, err := sim.ReadWorld(filepath.Join(dir, ".poolc", "sim-world.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(world.Fleet.Lanes) != 1 || world.Fleet.Lanes[0].Node != "b" || len(world.Fleet.Routes) != 2 {
		t.Fatalf("the sim's world holds %+v; want only node b's lane and both routes", world.Fleet)
	}
	if plan, err := run(t, bin, "plan", "--detailed-exitcode", dir); err != nil {
		t.Fatalf("the plan after the apply is not empty: %v\n%s", err, plan)
	}
	if list, _ := run(t, bin, "plugins", dir); !regexp.MustCompile(`(?m)^webhook +declared, pinned`).MatchString(list) || !strings.Contains(list, sum) ||
		!strings.Contains(list, `node "b", gateway`) {
		t.Errorf("poolc plugins:\n%s", list)
	}

	// A binary that is not the one pinned is refused.
	wrong := strings.Repeat("0", 64)
	os.WriteFile(cfgPath, []byte(pool(wrong)), 0o644)
	out, err = run(t, bin, "apply", "--auto-approve", dir)
	if err == nil || !strings.Contains(out, wrong) || !strings.Contains(out, sum) || !strings.Contains(out, "pool.hcl:") {
		t.Fatalf("a wrong pin was not refused with both sums and the config's place: %v\n%s", err, out)
	}
}
