//go:build e2e

package haproxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	mrand "math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"poolc.dev/poolc/internal/testing/llamastub"
	"poolc.dev/poolc/internal/testing/loadgen"
	"poolc.dev/poolc/internal/testing/syncbuf"
	"poolc.dev/poolc/internal/testing/testsshd"
)

// fleet is a real setup for poolc: three nodes (sshd on 127.0.0.2-4, one
// client key and one known_hosts for all), the llama-server stand-in,
// HAProxy on loopback, and a pool that uses the llama and haproxy
// actuators.
type fleet struct {
	t        *testing.T
	dir      string
	poolc    string
	nodes    []*testsshd.Server
	proxy    *proxy
	keyFile  string
	known    string
	stub     string
	src, sum string
	// weights is each model's source and sha256, src and sum when not
	// set.
	weights map[string]weights
	// residency is each lane's, keep-warm when not set; routerPort is
	// where every node's router listens.
	residency  map[string]string
	routerPort int
	// extra are the lanes the pool holds beside cognition and scribe.
	extra []extraLane
	// homes gives each node a home directory of its own (f.dir/home-nI),
	// as each machine has, and leaves state_dir to its default, relative
	// to that home, as the README's quick start does.
	homes bool
	// declared sets the haproxy plugin's config_file to the proxy's
	// configuration, which poolc then keeps.
	declared bool
	// chatFallbacks are alias chat's fallbacks in the pool (HCL list items).
	chatFallbacks string
}

// extraLane is a lane of its own model (file <name>.gguf), placed as
// placement says, with its aliases.
type extraLane struct {
	name, residency, placement string
	aliases                    []string
}

// weights is where a model's file is downloaded from and its sha256.
type weights struct{ src, sum string }

// serveWeights serves 2 MB of fresh random weights as name from an HTTP
// server on loopback, which answers Range requests as a real one does,
// until the test ends.
func serveWeights(t *testing.T, name string) weights {
	data, err := llamastub.ModelBytes(2_000_000)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
	}))
	t.Cleanup(src.Close)
	return weights{src: src.URL + "/" + name, sum: hex.EncodeToString(sum[:])}
}

// weightsOf is the model's weights in the pool the fleet writes.
func (f *fleet) weightsOf(model string) weights {
	if w, ok := f.weights[model]; ok {
		return w
	}
	return weights{f.src, f.sum}
}

// residencyOf is the lane's residency in the pool the fleet writes.
func (f *fleet) residencyOf(lane string) string {
	if r := f.residency[lane]; r != "" {
		return r
	}
	return "keep-warm"
}

// newFleet sets up the fleet with cognition, scribe and the extra lanes.
func newFleet(t *testing.T, extra ...extraLane) *fleet { return newFleetOf(t, fleetOpts{}, extra...) }

// fleetOpts are the fleet's variations: a home of its own for each node
// (see fleet.homes), and HAProxy in master-worker mode with the plugin's
// config_file and master_socket (poolc keeps the configuration and
// reloads it).
type fleetOpts struct{ homes, master bool }

// newFleetOf is newFleet with o.
func newFleetOf(t *testing.T, o fleetOpts, extra ...extraLane) *fleet {
	homes := o.homes
	f := &fleet{t: t, dir: t.TempDir(), residency: map[string]string{}, weights: map[string]weights{}, extra: extra, homes: homes, declared: o.master}
	f.poolc = filepath.Join(f.dir, "poolc")
	if out, err := exec.Command("go", "build", "-o", f.poolc, "poolc.dev/poolc/cmd/poolc").CombinedOutput(); err != nil {
		t.Fatalf("building poolc: %v\n%s", err, out)
	}
	stub, err := llamastub.ServerBinary(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	f.stub = stub
	var known bytes.Buffer
	for i := 0; i < 3; i++ {
		opts := []testsshd.Option{testsshd.OnAddress("127.0.0." + strconv.Itoa(i+2))}
		if homes {
			home := filepath.Join(f.dir, fmt.Sprintf("home-n%d", i+1))
			os.MkdirAll(home, 0o755)
			opts = append(opts, testsshd.WithEnv("HOME="+home))
		}
		s := testsshd.Start(t, opts...)
		f.nodes = append(f.nodes, s)
		kh, _ := os.ReadFile(s.KnownHosts)
		known.Write(kh)
	}
	// The first node's client key logs in everywhere.
	f.keyFile = f.nodes[0].ClientKey
	pem, _ := os.ReadFile(f.keyFile)
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range f.nodes[1:] {
		os.WriteFile(filepath.Join(s.Dir, "authorized_keys"), ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600)
	}
	f.routerPort = f.freeOnNodes()
	f.known = filepath.Join(f.dir, "known_hosts")
	os.WriteFile(f.known, known.Bytes(), 0o600)

	// The models' source, prefetched to every node they run on. The nodes
	// share this machine's files, so each lane has a model path of its
	// own: two nodes' prefetches never write one file at once, and a lane
	// moving to another node finds its file there with the right sha256.
	w := serveWeights(t, "q.gguf")
	f.src, f.sum = w.src, w.sum

	backends := []LaneBackend{{Lane: "cognition"}, {Lane: "scribe"}}
	aliases := []AliasRoute{{Alias: "chat", Lane: "cognition"}, {Alias: "notes", Lane: "scribe"}}
	for _, l := range extra {
		backends = append(backends, LaneBackend{Lane: l.name})
		for _, a := range l.aliases {
			aliases = append(aliases, AliasRoute{Alias: a, Lane: l.name})
		}
	}
	spec := testSpec(t, backends, aliases)
	if o.master {
		f.proxy = startMasterProxy(t, spec)
	} else {
		f.proxy = startProxy(t, spec)
	}
	t.Cleanup(f.stopLanes)
	return f
}

// writePool writes the pool with cognition's placement, and the extra
// lanes.
func (f *fleet) writePool(placement string) {
	var decls strings.Builder
	for i, s := range f.nodes {
		fmt.Fprintf(&decls, `
  node "n%d" {
    address   = %q
    ssh_port  = %d
    ssh_user  = %q
    memory_gb = 64
    runtime   = "llama"
  }`, i+1, s.Host, s.Port, s.User)
	}
	for _, l := range f.extra {
		fmt.Fprintf(&decls, `
  model %[1]q {
    path      = %[2]q
    source    = %[3]q
    sha256    = %[4]q
    size_gb   = 0.002
    memory_gb = 4
  }
  lane %[1]q {
    model     = %[1]q
    residency = %[5]q
    placement = [%[6]s]
    port      = %[7]d
  }`, l.name, filepath.Join(f.dir, "models", l.name+".gguf"), f.src, f.sum, l.residency, l.placement, f.port(l.name))
		for _, a := range l.aliases {
			fmt.Fprintf(&decls, `
  alias %q {
    lane = %q
  }`, a, l.name)
		}
	}
	spec := f.proxy.spec
	pool := fmt.Sprintf(`pool "fleet" {%s
  model "q" {
    path      = %q
    source    = %q
    sha256    = %q
    size_gb   = 0.002
    memory_gb = 4
  }
  model "q-notes" {
    path      = %q
    source    = %q
    sha256    = %q
    size_gb   = 0.002
    memory_gb = 4
  }
  lane "cognition" {
    model     = "q"
    residency = %q
    placement = [%s]
    port      = %d
  }
  lane "scribe" {
    model     = "q-notes"
    residency = %q
    placement = ["n3"]
    port      = %d
  }
  alias "chat" {
    lane = "cognition"
    fallbacks = [%s]
  }
  alias "notes" {
    lane = "scribe"
  }
  gateway {
    plugin = "haproxy"
  }
  plugin "llama" {
    builtin = true
    config = {
      known_hosts  = %q
      key_file     = %q
      no_agent     = true
      llama_server = %q
%s
      env          = { LLAMASTUB_LOAD_BYTES_PER_SEC = "8000000", LLAMASTUB_TOKEN_INTERVAL = "10ms" }
      stop_grace_seconds = 5
      router_port  = %d
    }
  }
  plugin "haproxy" {
    builtin = true
    config = {
      admin_socket = %q
      map_file     = %q
      state_file   = %q
      router_port  = %d
%s
    }
  }
}
`, decls.String(), filepath.Join(f.dir, "models", "q.gguf"), f.weightsOf("q").src, f.weightsOf("q").sum,
		filepath.Join(f.dir, "models", "q-notes.gguf"), f.weightsOf("q-notes").src, f.weightsOf("q-notes").sum, f.residencyOf("cognition"), placement, f.port("cognition"),
		f.residencyOf("scribe"), f.port("scribe"), f.chatFallbacks, f.known, f.keyFile, f.stub, f.stateDirLine(), f.routerPort,
		spec.AdminSocket, spec.MapFile, spec.StateFile, f.routerPort, f.configFileLine())
	if err := os.WriteFile(filepath.Join(f.dir, "pool.hcl"), []byte(pool), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// configFileLine is the haproxy block's config_file, with declared.
func (f *fleet) configFileLine() string {
	if !f.declared {
		return ""
	}
	line := fmt.Sprintf("      config_file  = %q\n      bind         = %q", f.proxy.cfg, f.proxy.spec.Bind)
	if f.proxy.master != "" {
		line += fmt.Sprintf("\n      master_socket = %q", f.proxy.master)
	}
	return line
}

// stateDirLine is the llama block's state_dir: none (the default, under
// each node's home) with homes, else the fleet's lanes directory.
func (f *fleet) stateDirLine() string {
	if f.homes {
		return ""
	}
	return fmt.Sprintf("      state_dir    = %q", filepath.Join(f.dir, "lanes"))
}

var lanePorts = map[string]int{}

// port is a lane's port, free on every node address.
func (f *fleet) port(lane string) int {
	if p, ok := lanePorts[lane]; ok {
		return p
	}
	lanePorts[lane] = f.freeOnNodes()
	return lanePorts[lane]
}

// freeOnNodes is a port free on this machine's loopback and on every
// node's address (other tests may listen on those).
func (f *fleet) freeOnNodes() int {
	for {
		p, free := freePort(f.t), true
		for _, s := range f.nodes {
			l, err := net.Listen("tcp", joinHostPort(s.Host, p))
			if err != nil {
				free = false
				break
			}
			l.Close()
		}
		if free {
			return p
		}
	}
}

// run runs poolc in the fleet's directory and returns its output and exit code.
func (f *fleet) run(args ...string) (string, int) {
	cmd := exec.Command(f.poolc, args...)
	cmd.Dir = f.dir
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		f.t.Fatalf("poolc %v: %v", args, err)
	}
	return string(out), code
}

func (f *fleet) apply() string {
	f.t.Helper()
	start := time.Now()
	out, code := f.run("apply", "--auto-approve", "pool.hcl")
	if code != 0 {
		f.t.Fatalf("poolc apply: exit %d\n%s", code, out)
	}
	f.t.Logf("apply took %s", time.Since(start).Round(time.Millisecond))
	return out
}

// applyUnderLoad streams chat completions for each alias through HAProxy
// (streams at a time each), makes change to the pool, applies it and
// checks that every alias is served before and after and that not one
// request failed or was cut; what names the change in messages. It
// returns poolc apply's output, which must name every step in steps.
func (f *fleet) applyUnderLoad(what string, streams int, aliases []string, change func(), steps ...string) string {
	t := f.t
	t.Helper()
	loads := make([]*loadgen.Load, len(aliases))
	for i, alias := range aliases {
		loads[i] = loadgen.Start(f.proxy.base(), alias, streams, 10)
	}
	for i, l := range loads {
		if !l.WaitServed(20, 60*time.Second) {
			t.Fatalf("no traffic for %s before %s: %d failed", aliases[i], what, l.Failed())
		}
	}
	change()
	start := time.Now()
	out := f.apply()
	took := time.Since(start)
	var summary []string
	failed := false
	for i, l := range loads {
		if !l.WaitServed(20, 60*time.Second) {
			t.Errorf("no traffic for %s after %s: %d failed", aliases[i], what, l.Failed())
			failed = true
		}
		r := l.Stop()
		summary = append(summary, fmt.Sprintf("%s %d served, %d failed in %s", aliases[i], r.Served, r.Failed, r.Duration.Round(time.Millisecond)))
		if r.Failed != 0 {
			t.Errorf("%d requests for %s failed or were cut during %s: %q", r.Failed, aliases[i], what, r.Errors)
			failed = true
		}
	}
	t.Logf("%s under load (%s); the apply took %s:\n%s", what, strings.Join(summary, "; "), took.Round(time.Millisecond), out)
	if failed {
		t.FailNow()
	}
	f.outputNames(out, steps...)
	return out
}

// outputNames asserts that poolc's output names every step in steps.
func (f *fleet) outputNames(out string, steps ...string) {
	f.t.Helper()
	for _, want := range steps {
		if !strings.Contains(out, want) {
			f.t.Errorf("apply output lacks %s:\n%s", want, out)
		}
	}
}

// planIsEmpty asserts a refreshed plan has nothing to do.
func (f *fleet) planIsEmpty(when string) {
	f.t.Helper()
	out, code := f.run("plan", "--detailed-exitcode", "pool.hcl")
	if code != 0 {
		f.t.Fatalf("plan %s: exit %d, want 0 (no changes)\n%s", when, code, out)
	}
}

// lanePIDs lists the live lane processes under the fleet's state
// directory, by node and lane (a pidfile is named LANE@PORT.pid).
func (f *fleet) lanePIDs() map[string]int {
	pids := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(f.dir, "lanes", "*", "*.pid"))
	if f.homes {
		files, _ = filepath.Glob(filepath.Join(f.dir, "home-n*", ".poolc", "lanes", "*", "*.pid"))
	}
	for _, p := range files {
		b, _ := os.ReadFile(p)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		lane, _, _ := strings.Cut(strings.TrimSuffix(filepath.Base(p), ".pid"), "@")
		if err == nil && processLives(pid) {
			pids[filepath.Base(filepath.Dir(p))+"/"+lane] = pid
		}
	}
	return pids
}

func (f *fleet) stopLanes() {
	for _, pid := range f.lanePIDs() {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func processLives(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(st), ") Z ")
}

// TestE2EApplyBringsUpTheFleetAndMovesALaneUnderLoad is the whole path:
// poolc apply brings every lane up on real sshd nodes behind a real
// HAProxy, a refreshed plan is then empty, a lane moves to another node
// while a load generator streams chat completions for its alias with not
// one request failed or cut, and a lane killed by hand is drift that the
// next apply repairs.
func TestE2EApplyBringsUpTheFleetAndMovesALaneUnderLoad(t *testing.T) {
	f := newFleet(t)
	f.writePool(`"n1", "n2"`)
	f.outputNames(f.apply(), "prefetch:q@n1", "prefetch:q-notes@n3", "start:cognition@n1", "start:scribe@n3", "route:chat", "route:notes")
	f.planIsEmpty("after the bring-up")
	if pids := f.lanePIDs(); len(pids) != 2 || pids["n1/cognition"] == 0 || pids["n3/scribe"] == 0 {
		t.Fatalf("lane processes %v", pids)
	}

	// The move: cognition prefers n2 now.
	f.applyUnderLoad("the lane move", 6, []string{"chat"}, func() { f.writePool(`"n2", "n1"`) })
	if pids := f.lanePIDs(); len(pids) != 2 || pids["n2/cognition"] == 0 || pids["n1/cognition"] != 0 {
		t.Fatalf("after the move, lane processes %v", pids)
	}
	f.planIsEmpty("after the move")

	// A lane killed by hand is drift.
	syscall.Kill(f.lanePIDs()["n3/scribe"], syscall.SIGKILL)
	// A killed process dies when the kernel next runs it: wait for that,
	// not for a fixed while a loaded machine may not give it.
	for deadline := time.Now().Add(30 * time.Second); f.lanePIDs()["n3/scribe"] != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the killed scribe@n3 still runs after 30s")
		}
	}
	out, code := f.run("plan", "--detailed-exitcode", "pool.hcl")
	if code != 2 || !strings.Contains(out, "scribe") || !strings.Contains(out, "start scribe@n3") {
		t.Fatalf("plan after a kill: exit %d\n%s", code, out)
	}
	f.apply()
	f.planIsEmpty("after the repair")
	if err := loadgen.Chat(t.Context(), http.DefaultClient, f.proxy.base(), "notes", 3); err != nil {
		t.Errorf("notes after the repair: %v", err)
	}
}

// laneProcesses counts the live llama-server processes by the address
// they listen on (--host H --port P): one node's one lane each.
func (f *fleet) laneProcesses() map[string]int {
	counts := map[string]int{}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.HasPrefix(b, []byte(f.stub+"\x00")) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if !processLives(pid) {
			continue
		}
		args := strings.Split(string(b), "\x00")
		var host, port string
		for i := 0; i+1 < len(args); i++ {
			switch args[i] {
			case "--host":
				host = args[i+1]
			case "--port":
				port = args[i+1]
			}
		}
		counts[host+":"+port]++
	}
	return counts
}

// checkSafe asserts what must hold at every moment, even right after
// poolc was killed: no node runs two processes of one lane, and HAProxy
// sends no alias to a server where no lane answers.
func (f *fleet) checkSafe(when string) {
	f.t.Helper()
	for addr, n := range f.laneProcesses() {
		if n > 1 {
			f.t.Errorf("%s: %d processes of the lane at %s", when, n, addr)
		}
	}
	obs, err := f.proxy.gateway(f.t).Observe(f.t.Context())
	if err != nil {
		f.t.Fatalf("%s: %v", when, err)
	}
	for _, o := range obs {
		for _, e := range o.Endpoints {
			resp, err := http.Get("http://" + joinHostPort(e.Addr, e.Port) + "/health")
			if err == nil {
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != http.StatusOK {
				f.t.Errorf("%s: HAProxy routes %s to %s:%d, where no lane serves (%v)", when, o.Alias, e.Addr, e.Port, err)
			}
		}
	}
}

// noLeftovers asserts that HAProxy keeps no server of poolc's in DRAIN
// and none live (ready or draining) where no lane answers: what a route
// step cut off used to leave behind.
func (f *fleet) noLeftovers(when string) {
	f.t.Helper()
	for _, s := range f.servers(when) {
		if s.Maint() || laneOfBackend(s.Backend) == "" || s.Backend == Cloud {
			continue
		}
		if s.Draining() {
			f.t.Errorf("%s: server %s/%s (%s:%d) is left in DRAIN", when, s.Backend, s.Name, s.Addr, s.Port)
		}
		resp, err := http.Get("http://" + joinHostPort(s.Addr, s.Port) + "/health")
		if err == nil {
			resp.Body.Close()
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			f.t.Errorf("%s: server %s/%s is live towards %s:%d, where no lane serves (%v)", when, s.Backend, s.Name, s.Addr, s.Port, err)
		}
	}
}

// servers is every server of HAProxy's, as its admin socket shows them.
func (f *fleet) servers(when string) []Server {
	f.t.Helper()
	out, err := (Runtime{Dial: f.proxy.localDialer()}).Exec(f.t.Context(), "show", "servers", "state")
	if err != nil {
		f.t.Fatalf("%s: %v", when, err)
	}
	srvs, err := parseServersState(out)
	if err != nil {
		f.t.Fatal(err)
	}
	return srvs
}

// events matches the lines apply prints as a step starts or ends.
var events = regexp.MustCompile(`\] +(started|done|FAILED) `)

// TestE2EApplyKilledAtRandomPointsConverges kills poolc with SIGKILL at a
// random moment of an apply that moves a lane, ten times: each time the
// fleet is safe right after the kill, and the next apply converges to an
// empty plan.
func TestE2EApplyKilledAtRandomPointsConverges(t *testing.T) {
	f := newFleet(t)
	placements := []string{`"n1", "n2"`, `"n2", "n1"`}
	f.writePool(placements[0])
	f.apply()
	seed := time.Now().UnixNano()
	rng := mrand.New(mrand.NewSource(seed))
	t.Logf("seed %d", seed)
	const trials = 10
	for trial := 1; trial <= trials; trial++ {
		f.writePool(placements[trial%2])
		cmd := exec.Command(f.poolc, "apply", "--auto-approve", "pool.hcl")
		cmd.Dir = f.dir
		out := &syncbuf.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// Kill after the k-th step event (a step started or done) and a
		// jitter, so the kill lands anywhere among the steps: before the
		// new lane is up, between the route and the stop, during the stop.
		k := 1 + rng.Intn(8)
		jitter := time.Duration(rng.Int63n(int64(700 * time.Millisecond)))
		killed := false
	wait:
		for {
			select {
			case <-done:
				break wait
			case <-time.After(10 * time.Millisecond):
			}
			if len(events.FindAllStringIndex(out.String(), -1)) >= k {
				time.Sleep(jitter)
				cmd.Process.Kill()
				<-done
				killed = true
				break wait
			}
		}
		steps := strings.Count(out.String(), " done ")
		t.Logf("trial %d: killed=%v after event %d + %s, %d steps had finished", trial, killed, k, jitter.Round(time.Millisecond), steps)
		f.checkSafe(fmt.Sprintf("trial %d, after the kill", trial))
		f.apply()
		f.planIsEmpty(fmt.Sprintf("trial %d, after the re-apply", trial))
		f.checkSafe(fmt.Sprintf("trial %d, after the re-apply", trial))
		f.noLeftovers(fmt.Sprintf("trial %d, after the re-apply", trial))
	}
}
