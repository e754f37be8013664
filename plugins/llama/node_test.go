package llama

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/llamastub"
	"poolc.dev/poolc/internal/testing/loadgen"
)

func TestStartWaitsForHealthAndStopDrainsInFlightStreams(t *testing.T) {
	ctx := context.Background()
	n := NewNode(Local{}, testSettings(t))
	l := testLane(t, "cognition", 2_000_000, "chat", "big")
	stopAtEnd(t, n, l)
	start := time.Now()
	var lines []string
	if err := n.Start(ctx, l, func(s string) { lines = append(lines, s) }); err != nil {
		t.Fatal(err)
	}
	// The stand-in needs 0.5s to load 2 MB at 4 MB/s: Start returned
	// only after /health said 200.
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Errorf("Start returned after %s, before the model could have loaded", d)
	}
	if len(lines) != 2 || !strings.Contains(lines[0], "started as pid") {
		t.Errorf("progress %q", lines)
	}
	resp, err := http.Get("http://" + l.probeAddr() + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health after start: %v %v", resp, err)
	}
	resp.Body.Close()

	obs, err := n.Observe(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Lanes) != 1 || obs.Lanes[0].Name != "cognition" || obs.Lanes[0].Model != l.Model ||
		strings.Join(obs.Lanes[0].Aliases, ",") != "big,chat" || len(obs.Drift) != 0 {
		t.Fatalf("observed %+v", obs)
	}
	if obs.MemoryTotal <= 0 || obs.MemoryFree <= 0 {
		t.Errorf("memory %d/%d", obs.MemoryFree, obs.MemoryTotal)
	}
	pid := obs.Lanes[0].PID

	// A second start finds the lane live and starts nothing.
	lines = nil
	if err := n.Start(ctx, l, func(s string) { lines = append(lines, s) }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lines[0], "running as pid "+strconv.Itoa(pid)) {
		t.Errorf("second start: %q", lines)
	}

	// A stream in flight when the stop begins completes: stop waits for
	// the slot to go idle before SIGTERM.
	streamed := make(chan error, 1)
	go func() {
		streamed <- loadgen.Send(ctx, http.DefaultClient, "http://"+l.probeAddr(), loadgen.Request{Model: "chat", MaxTokens: 60, IgnoreEOS: true})
	}()
	waitBusy(t, n, l)
	if err := n.Stop(ctx, l, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-streamed; err != nil {
		t.Errorf("the stream in flight at stop: %v", err)
	}
	if processLives(pid) {
		t.Errorf("pid %d still runs after stop", pid)
	}
	if obs, _ := n.Observe(ctx, nil); len(obs.Lanes)+len(obs.Drift) != 0 {
		t.Errorf("after stop: %+v", obs)
	}
	// Stopping a lane that is gone succeeds.
	if err := n.Stop(ctx, l, nil); err != nil {
		t.Errorf("second stop: %v", err)
	}
}

// waitBusy waits until the lane has a request in flight.
func waitBusy(t *testing.T, n *Node, l Lane) {
	t.Helper()
	p := n.session.prober(l)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := p.busy(context.Background()); err == nil && b > 0 {
			return
		}
	}
	t.Fatal("the lane never had a request in flight")
}

func TestStartOfAModelThatFailsToLoadReportsItsLog(t *testing.T) {
	n := NewNode(Local{}, testSettings(t))
	l := testLane(t, "broken", 1000)
	if err := os.WriteFile(l.Model, []byte("not a gguf file"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := n.Start(context.Background(), l, nil)
	var se *StartError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "exited while loading") || !strings.Contains(err.Error(), "invalid magic") {
		t.Fatalf("err = %v", err)
	}
}

func TestStartTimesOutWhileLoading(t *testing.T) {
	llamastub.NeedStandIn(t, "a load slower than the start timeout")
	set := testSettings(t)
	// The stand-in must be up and say 503 before the timeout: a loaded
	// machine may take seconds to start it, so the timeout is 10s and the
	// load far longer (400s at 100 kB/s), not 2s against a 10s load.
	set.StartBase = 10 * time.Second
	set.LoadRate = 1 << 40 // the timeout leaves no time for the model
	set.Env[llamastub.EnvLoadRate] = "100000"
	n := NewNode(Local{}, set)
	l := testLane(t, "slow", 40_000_000)
	stopAtEnd(t, n, l)
	err := n.Start(context.Background(), l, nil)
	if err == nil || !strings.Contains(err.Error(), "did not answer /health 200") || !strings.Contains(err.Error(), "503 (loading)") {
		t.Fatalf("err = %v", err)
	}
}

func TestAKilledLaneIsDriftAndItsStopSucceeds(t *testing.T) {
	ctx := context.Background()
	n := NewNode(Local{}, testSettings(t))
	l := testLane(t, "victim", 100_000, "chat")
	if err := n.Start(ctx, l, nil); err != nil {
		t.Fatal(err)
	}
	obs, err := n.Observe(ctx, nil)
	if err != nil || len(obs.Lanes) != 1 {
		t.Fatalf("%+v %v", obs, err)
	}
	pid := obs.Lanes[0].PID
	syscall.Kill(pid, syscall.SIGKILL)
	for processLives(pid) {
		time.Sleep(10 * time.Millisecond)
	}
	obs, err = n.Observe(ctx, nil)
	if err != nil || len(obs.Lanes) != 0 || len(obs.Drift) != 1 || !strings.Contains(obs.Drift[0], "is gone") {
		t.Fatalf("after kill: %+v %v", obs, err)
	}
	if err := n.Stop(ctx, l, nil); err != nil {
		t.Fatal(err)
	}
	if obs, _ := n.Observe(ctx, nil); len(obs.Drift) != 0 {
		t.Errorf("stop left %v", obs.Drift)
	}
	// The lane starts again after the drift.
	stopAtEnd(t, n, l)
	if err := n.Start(ctx, l, nil); err != nil {
		t.Fatal(err)
	}
}

func TestAPidfileOfAnotherProgramIsNeverSignalled(t *testing.T) {
	ctx := context.Background()
	set := testSettings(t)
	n := NewNode(Local{}, set)
	l := testLane(t, "reused", 1000)
	// A pidfile naming this test's own process: a pid reused by another
	// program after the lane died.
	if err := os.MkdirAll(set.StateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(set.StateDir+"/reused.pid", []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	os.WriteFile(set.StateDir+"/reused.json", []byte(`{"name":"reused","host":"127.0.0.1","port":`+strconv.Itoa(l.Port)+`,"model":"`+l.Model+`"}`+"\n"), 0o644)
	obs, err := n.Observe(ctx, nil)
	if err != nil || len(obs.Lanes) != 0 || len(obs.Drift) != 1 || !strings.Contains(obs.Drift[0], "is not its server") {
		t.Fatalf("%+v %v", obs, err)
	}
	if err := n.Stop(ctx, l, nil); err != nil {
		t.Fatal(err)
	}
	// Still alive to tell: and the pidfile is forgotten.
	if _, err := os.Stat(set.StateDir + "/reused.pid"); !os.IsNotExist(err) {
		t.Errorf("pidfile kept: %v", err)
	}
}

func TestLaneValidationAndArgv(t *testing.T) {
	good := Lane{Name: "a", Port: 8081, Model: "/m/a.gguf", Aliases: []string{"z", "chat", "z"}, Args: []string{"-ngl", "99"}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	set := Settings{Env: map[string]string{"B": "2", "A": "1 two"}}.withDefaults()
	env, err := set.environ()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(env, " ") != "A=1 two B=2" {
		t.Errorf("env %q", env)
	}
	argv := set.argv(good)
	want := "llama-server --host 0.0.0.0 --port 8081 -m /m/a.gguf --alias chat,z --metrics --slots -ngl 99"
	if strings.Join(argv, " ") != want {
		t.Errorf("argv %q\nwant %q", strings.Join(argv, " "), want)
	}
	for _, bad := range []Lane{
		{Name: "../x", Port: 1, Model: "/m"},
		{Name: "a", Port: 0, Model: "/m"},
		{Name: "a", Port: 1, Model: "m.gguf"},
		{Name: "a", Port: 1, Model: "/m/../etc"},
		{Name: "a", Port: 1, Model: "/m", Aliases: []string{"a,b"}},
		{Name: "a", Port: 1, Model: "/m", Args: []string{"--port=9"}},
		{Name: "a", Port: 1, Model: "/m", Host: "h; rm"},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := (Settings{Env: map[string]string{"A;B": "x"}}).environ(); err == nil {
		t.Error("bad env name accepted")
	}
}

// TestAZombieIsNotALane: a lane process that exited but was not reaped
// (its parent gone, no init reaping) still answers kill -0; it is drift,
// a stop does not wait for it, and a start starts the lane anew.
func TestAZombieIsNotALane(t *testing.T) {
	ctx := context.Background()
	set := testSettings(t)
	n := NewNode(Local{}, set)
	l := testLane(t, "zombie", 1000)
	// A child of this test that exits and is not waited for is a zombie.
	cmd := exec.Command("sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(st), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not become a zombie in 30s", pid)
		}
	}
	os.MkdirAll(set.StateDir, 0o755)
	// The lane's own files, as its start would have left them.
	key := set.StateDir + "/" + l.key()
	os.WriteFile(key+".pid", []byte(strconv.Itoa(pid)+"\n"), 0o644)
	os.WriteFile(key+".json", []byte(`{"name":"zombie","host":"127.0.0.1","port":`+strconv.Itoa(l.Port)+`,"model":"`+l.Model+`"}`+"\n"), 0o644)
	obs, err := n.Observe(ctx, nil)
	if err != nil || len(obs.Drift) != 1 || !strings.Contains(obs.Drift[0], "is gone") {
		t.Fatalf("%+v %v", obs, err)
	}
	if alive, err := n.procs.alive(ctx, strconv.Itoa(pid)); err != nil || alive {
		t.Errorf("a zombie is alive: %v %v", alive, err)
	}
	// A start over the zombie's pidfile starts the lane (seen in the
	// e2e suite: a lane killed by hand stayed a zombie, and the repair's
	// start reported it running, then exited while loading).
	stopAtEnd(t, n, l)
	var lines []string
	if err := n.Start(ctx, l, func(s string) { lines = append(lines, s) }); err != nil {
		t.Fatalf("start over a zombie's pidfile: %v %q", err, lines)
	}
	if len(lines) == 0 || !strings.Contains(lines[0], "started as pid") || strings.Contains(lines[0], "pid "+strconv.Itoa(pid)+",") {
		t.Errorf("start over a zombie's pidfile: %q", lines)
	}
}

// TestAStaleStartLockIsBroken: a start cut off with its session leaves its
// lock directory; the next start breaks it since its holder is gone.
func TestAStaleStartLockIsBroken(t *testing.T) {
	set := testSettings(t)
	n := NewNode(Local{}, set)
	l := testLane(t, "locked", 1000)
	stopAtEnd(t, n, l)
	cmd := exec.Command("true")
	cmd.Run()
	os.MkdirAll(set.StateDir+"/locked.lock", 0o755)
	os.WriteFile(set.StateDir+"/locked.lock/pid", []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	if err := n.Start(context.Background(), l, nil); err != nil {
		t.Fatal(err)
	}
}

// argvRecorder is the local host, recording every command line it runs.
type argvRecorder struct {
	Local
	mu    sync.Mutex
	lines []string
}

func (r *argvRecorder) Run(ctx context.Context, argv []string, stdin io.Reader) ([]byte, error) {
	r.mu.Lock()
	r.lines = append(r.lines, strings.Join(argv, " "))
	r.mu.Unlock()
	return r.Local.Run(ctx, argv, stdin)
}

// A lane's environment (a token) reaches its process and no command line
// on the node: neither the one poolc runs nor the lane's own, which any
// user of the node reads with ps. It once ran `env HF_TOKEN=... llama-server`.
func TestALanesEnvironmentIsOnNoCommandLine(t *testing.T) {
	ctx := context.Background()
	const secret = "S3CRET-hf-token"
	set := testSettings(t)
	set.Env["HF_TOKEN"] = secret
	host := &argvRecorder{}
	n := NewNode(host, set)
	l := testLane(t, "env", 1000)
	if err := n.Start(ctx, l, nil); err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, n, l)
	obs, err := n.Observe(ctx, nil)
	if err != nil || len(obs.Lanes) != 1 {
		t.Fatalf("observed %+v %v", obs, err)
	}
	pid := strconv.Itoa(obs.Lanes[0].PID)
	cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
	environ, _ := os.ReadFile("/proc/" + pid + "/environ")
	if strings.Contains(string(cmdline), secret) {
		t.Errorf("the lane's command line shows the token: %q", bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	}
	if !strings.Contains(string(environ), "HF_TOKEN="+secret) {
		t.Errorf("the lane's environment lacks HF_TOKEN")
	}
	for _, line := range host.lines {
		if strings.Contains(line, secret) {
			t.Errorf("poolc ran a command line with the token: %.300s", line)
		}
	}
}

// An answer over the probe's bound is reported as too large: /props of
// more than 1 MiB was "unexpected end of JSON input".
func TestAProbeAnswerTooLargeSaysSo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"x":"` + strings.Repeat("a", 2<<20) + `"}`))
	}))
	defer srv.Close()
	p := prober{client: srv.Client(), addr: srv.Listener.Addr().String()}
	var v props
	err := p.getJSON(context.Background(), "/props", &v)
	if err == nil || !strings.Contains(err.Error(), "GET /props: the answer is too large: more than 1048576 bytes") {
		t.Fatalf("err = %v", err)
	}
}

// TestAStartKillsItsLanesOwnProcessThatIsStopping: a lane told to stop
// (SIGTERM) by an apply that was then killed closes its port at once but
// lives on, as llama-server does; the next start must not take it for the
// running lane and wait on its /health: it kills it and starts the lane.
func TestAStartKillsItsLanesOwnProcessThatIsStopping(t *testing.T) {
	ctx := context.Background()
	n, l, old := stoppingLane(t, testSettings(t))
	var lines []string
	if err := n.Start(ctx, l, func(s string) { lines = append(lines, s) }); err != nil {
		t.Fatalf("start after the lane was told to stop: %v (progress %q)", err, lines)
	}
	for deadline := time.Now().Add(10 * time.Second); processLives(old); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d, the stopping process, still lives after the start", old)
		}
	}
	if !strings.Contains(strings.Join(lines, "\n"), "no longer listens") {
		t.Errorf("progress %q does not say why the old process was killed", lines)
	}
}

// TestAStoppingProcessIsObservedAsItsLaneNotLoaded: a lane told to stop
// (SIGTERM) by an apply that was then killed closes its port but lives
// on, holding its memory. Observe reports it as the lane, not loaded (as
// drift alone no plan would stop it, and it lived on beside its
// replacement: the fleet walk's seed 2, change 4), and its stop does not
// wait out the drain timeout on a port that takes no request.
func TestAStoppingProcessIsObservedAsItsLaneNotLoaded(t *testing.T) {
	ctx := context.Background()
	set := testSettings(t)
	set.DrainTimeout = time.Minute
	n, l, old := stoppingLane(t, set)
	obs, err := n.Observe(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Lanes) != 1 || obs.Lanes[0].Name != l.Name || obs.Lanes[0].Port != l.Port || obs.Lanes[0].PID != old || obs.Lanes[0].Loaded {
		t.Fatalf("observed lanes %+v (drift %q); want cognition on port %d, pid %d, not loaded", obs.Lanes, obs.Drift, l.Port, old)
	}
	if len(obs.Drift) != 1 || !strings.Contains(obs.Drift[0], "does not listen on port") {
		t.Errorf("drift %q; want one warning saying the process does not listen", obs.Drift)
	}
	var lines []string
	start := time.Now()
	if err := n.Stop(ctx, l, func(s string) { lines = append(lines, s) }); err != nil {
		t.Fatalf("stop: %v (progress %q)", err, lines)
	}
	if processLives(old) {
		t.Fatalf("pid %d still lives after the stop", old)
	}
	said := strings.Join(lines, "\n")
	if strings.Contains(said, "not idle") || !strings.Contains(said, "no longer listens on port") {
		t.Errorf("the stop took %s and said %q; want the drain to see at once that the port takes no request", time.Since(start).Round(time.Millisecond), lines)
	}
	if obs, err := n.Observe(ctx, nil); err != nil || len(obs.Lanes) != 0 || len(obs.Drift) != 0 {
		t.Errorf("after the stop: %+v %v; want nothing", obs, err)
	}
}

// stoppingLane starts lane cognition on a node of set, loaded, and
// SIGTERMs it: the stand-in closes its port at once and lingers, as
// llama-server does. It returns the node, the lane and the pid.
func stoppingLane(t *testing.T, set Settings) (*Node, Lane, int) {
	t.Helper()
	ctx := context.Background()
	set.Env[llamastub.EnvLinger] = "10m"
	n := NewNode(Local{}, set)
	l := testLane(t, "cognition", 200_000, "chat")
	stopAtEnd(t, n, l)
	if err := n.Start(ctx, l, nil); err != nil {
		t.Fatal(err)
	}
	obs, err := n.Observe(ctx, nil)
	if err != nil || len(obs.Lanes) != 1 || !obs.Lanes[0].Loaded {
		t.Fatalf("observed %+v %v, want cognition loaded", obs, err)
	}
	pid := obs.Lanes[0].PID
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := http.Get("http://" + l.probeAddr() + "/health"); err != nil {
			break // the port closed; the process lingers
		}
		if time.Now().After(deadline) {
			t.Fatal("the port did not close after SIGTERM")
		}
	}
	if !processLives(pid) {
		t.Fatal("the stand-in did not linger after SIGTERM; the test needs it to")
	}
	return n, l, pid
}
