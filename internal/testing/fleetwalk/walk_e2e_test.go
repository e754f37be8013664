//go:build e2e && walk

package fleetwalk

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
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
	"poolc.dev/poolc/plugins/haproxy"
)

// TestE2EFleetWalk walks a fleet through seeded random changes and faults
// under load (see the package comment). It prints each seed; a failure
// names the seed and the prefix of the walk that reproduces it: the walk
// stops at its first failing change, every shorter prefix having passed.
func TestE2EFleetWalk(t *testing.T) {
	// The CI set (see ciWalks).
	walks := ciWalks
	if v := os.Getenv("POOLC_WALK_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("POOLC_WALK_SEED=%q: want an integer", v)
		}
		walks = []seedWalk{{seed: n, steps: 30}}
	}
	if v := os.Getenv("POOLC_WALK_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("POOLC_WALK_STEPS=%q: want a positive integer", v)
		}
		for i := range walks {
			walks[i].steps = n
		}
	}
	for _, sw := range walks {
		seed, steps := sw.seed, sw.steps
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			t.Logf("fleet walk: seed %d, %d changes (POOLC_WALK_SEED=%d POOLC_WALK_STEPS=%d to run it again)", seed, steps, seed, steps)
			newWorld(t, seed).walk(steps)
		})
	}
}

// seedWalk is one seed's walk and its number of changes.
type seedWalk struct {
	seed  int64
	steps int
}

// ciWalks is the walk CI runs: two seeds of 30 changes each (about 8 and
// 6 minutes on a shared 2-core machine; more would take .ci/run too near
// its hour). On 2026-12-02 seeds 2, 4, 5 and 6 each passed 30 changes by
// hand (POOLC_WALK_SEED=N). What the walk found, and what became of it, is
// in docs/testing.md; the last four, fixed that day:
//   - seed 2, change 1 in CI's run: an interruption drained its lane while
//     the alias still routed there, which under a load that always has a
//     request in flight never ends;
//   - seed 2, change 4: a lane process told to stop by an apply SIGKILLed
//     before the SIGKILL lived on beside its replacement (observed as
//     drift, so no plan stopped it);
//   - seed 2, change 22 and seed 4, change 6: a lane no alias routes to
//     (only a fallback) had no gateway step, so its HAProxy server kept
//     the old address or stayed ready;
//   - seed 5, change 17: a lane killed by hand left a route the state did
//     not hold, and every later command refused the state.
var ciWalks = []seedWalk{{seed: 2, steps: 30}, {seed: 6, steps: 30}}

// spec is the pool the walk changes; render writes it as pool.hcl.
type spec struct {
	models  map[string]*modelSpec // by lane: each lane has a model (and file) of its own
	lanes   map[string]*laneSpec
	aliases map[string]*aliasSpec
	cordon  []string // nodes the active profile cordons
	night   bool     // the active profile is "night", which makes coder on-demand
}

type modelSpec struct {
	version int // the weights' version: a new one is an upgrade under the same name
	ctx     int // the model's --ctx-size argument
}

type laneSpec struct {
	residency string
	placement []string
	port      int
}

type aliasSpec struct {
	lane      string
	fallbacks []string
}

// world is the fleet the walk runs on.
type world struct {
	t        *testing.T
	rng      *rand.Rand
	seed     int64
	dir, bin string // the test's directory and its bin (poolc, llama-server)
	poolc    string
	exe      string // the llama-server executable the lanes run
	nodes    []*testsshd.Server
	names    []string // node names, by index
	known    string
	key      string
	weights  *httptest.Server
	blobs    map[string][]byte // path on the weights server → bytes
	gw       gateway
	spec     spec
	history  []string // the changes made so far, for the failing prefix
	applied  []string // what the applies of the current change said
	counts   struct{ served, failed, applies, changes int64 }
}

// gateway is the HAProxy the walk runs, as an operator would: its
// configuration from poolc gateway config, in master-worker mode with a
// master CLI, which the haproxy plugin's config_file and master_socket
// name, so that poolc keeps the file and reloads HAProxy for a new lane.
type gateway struct {
	cfg, admin, master, mapFile, state, bind string
	cmd                                      *exec.Cmd
	log                                      *syncbuf.Buffer
	exited                                   chan struct{}
}

func newWorld(t *testing.T, seed int64) *world {
	w := &world{t: t, rng: rand.New(rand.NewSource(seed)), seed: seed, dir: t.TempDir(), blobs: map[string][]byte{}}
	w.bin = filepath.Join(w.dir, "bin")
	os.MkdirAll(w.bin, 0o755)
	w.poolc = filepath.Join(w.bin, "poolc")
	if out, err := exec.Command("go", "build", "-o", w.poolc, "poolc.dev/poolc/cmd/poolc").CombinedOutput(); err != nil {
		t.Fatalf("building poolc: %v\n%s", err, out)
	}
	server, err := llamastub.ServerBinary(w.bin)
	if err != nil {
		t.Fatal(err)
	}
	if w.exe, err = filepath.EvalSymlinks(server); err != nil {
		t.Fatal(err)
	}
	// The lanes find llama-server on PATH, the README's default.
	path := "PATH=" + w.bin + ":/usr/local/bin:/usr/bin:/bin"
	var known bytes.Buffer
	run := fmt.Sprintf("wk%04d", os.Getpid()%10000)
	for i := 0; i < 3; i++ {
		s := testsshd.Start(t, testsshd.OnAddress("127.0.0."+strconv.Itoa(i+2)), testsshd.WithEnv(path))
		w.nodes = append(w.nodes, s)
		w.names = append(w.names, fmt.Sprintf("%s-n%d", run, i+1))
		kh, _ := os.ReadFile(s.KnownHosts)
		known.Write(kh)
	}
	t.Cleanup(func() {
		w.killOurs()
		for _, n := range w.names {
			os.RemoveAll(filepath.Join(w.stateDir(), n))
		}
	})
	w.key = w.nodes[0].ClientKey
	pem, _ := os.ReadFile(w.key)
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range w.nodes[1:] {
		os.WriteFile(filepath.Join(s.Dir, "authorized_keys"), ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600)
	}
	w.known = filepath.Join(w.dir, "known_hosts")
	os.WriteFile(w.known, known.Bytes(), 0o600)
	w.weights = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, ok := w.blobs[r.URL.Path]
		if !ok {
			http.NotFound(rw, r)
			return
		}
		http.ServeContent(rw, r, filepath.Base(r.URL.Path), time.Time{}, bytes.NewReader(b))
	}))
	t.Cleanup(w.weights.Close)
	os.MkdirAll(filepath.Join(w.dir, "models"), 0o755)

	w.gw = gateway{admin: filepath.Join(w.dir, "haproxy.sock"), mapFile: filepath.Join(w.dir, "aliases.map"),
		state: filepath.Join(w.dir, "servers.state"), cfg: filepath.Join(w.dir, "haproxy.cfg"), master: filepath.Join(w.dir, "haproxy-master.sock"),
		bind: "127.0.0.1:" + strconv.Itoa(w.freePort())}
	w.spec = spec{models: map[string]*modelSpec{}, lanes: map[string]*laneSpec{}, aliases: map[string]*aliasSpec{}}
	// A pool like spark-lab's: keep-warm, preferred and on-demand lanes
	// on every node, aliases with fallbacks.
	for _, l := range []struct{ name, residency string }{
		{"cognition", "keep-warm"}, {"coder", "preferred"}, {"scribe", "on-demand"}, {"jot", "on-demand"}, {"tts", "keep-warm"},
	} {
		w.addLane(l.name, l.residency)
	}
	w.spec.aliases["chat"] = &aliasSpec{lane: "cognition", fallbacks: []string{"coder"}}
	w.spec.aliases["code"] = &aliasSpec{lane: "coder", fallbacks: []string{"cognition"}}
	w.spec.aliases["notes"] = &aliasSpec{lane: "scribe"}
	w.spec.aliases["memo"] = &aliasSpec{lane: "jot", fallbacks: []string{"scribe"}}
	w.spec.aliases["speak"] = &aliasSpec{lane: "tts"}
	w.render()
	w.startGateway(true)
	t.Cleanup(w.stopGateway)
	return w
}

// addLane adds a lane of a model of its own, placed on two random nodes.
func (w *world) addLane(name, residency string) {
	w.spec.models[name] = &modelSpec{version: 1, ctx: 2048}
	w.spec.lanes[name] = &laneSpec{residency: residency, placement: w.somePlacement(), port: w.freePort()}
}

func (w *world) somePlacement() []string {
	p := w.rng.Perm(len(w.names))
	return []string{w.names[p[0]], w.names[p[1]]}
}

// freePort is a port free on this machine's loopback and every node's address.
func (w *world) freePort() int {
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			w.t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		free := true
		for i := 2; i <= 4 && free; i++ {
			if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0."+strconv.Itoa(i), strconv.Itoa(p))); err != nil {
				free = false
			} else {
				l.Close()
			}
		}
		if free {
			return p
		}
	}
}

// blob is the URL of model name's weights at version, served fresh.
func (w *world) blob(name string, version int) (src, sum string) {
	p := fmt.Sprintf("/%s/v%d.gguf", name, version)
	b, ok := w.blobs[p]
	if !ok {
		var err error
		if b, err = llamastub.ModelBytes(1_000_000); err != nil {
			w.t.Fatal(err)
		}
		w.blobs[p] = b
	}
	s := sha256.Sum256(b)
	return w.weights.URL + p, hex.EncodeToString(s[:])
}

func quoted(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}

// modelPath is the file of lane's model.
func (w *world) modelPath(lane string) string {
	return filepath.Join(w.dir, "models", lane+".gguf")
}

// render writes the spec as pool.hcl, with the README's defaults for the
// llama actuator (relative state_dir, llama-server on PATH, default
// parallelism and timings).
func (w *world) render() {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p(`pool "walk" {`)
	for i, s := range w.nodes {
		p("  node %q {\n    address   = %q\n    ssh_port  = %d\n    ssh_user  = %q\n    memory_gb = 24\n    runtime   = \"llama\"\n  }", w.names[i], s.Host, s.Port, s.User)
	}
	for _, l := range slices.Sorted(maps.Keys(w.spec.lanes)) {
		m, ls := w.spec.models[l], w.spec.lanes[l]
		src, sum := w.blob("m-"+l, m.version)
		p("  model %q {\n    path      = %q\n    source    = %q\n    sha256    = %q\n    size_gb   = 0.001\n    memory_gb = 4\n    args      = [\"--ctx-size\", \"%d\"]\n  }",
			"m-"+l, w.modelPath(l), src, sum, m.ctx)
		p("  lane %q {\n    model     = %q\n    residency = %q\n    placement = [%s]\n    port      = %d\n  }", l, "m-"+l, ls.residency, quoted(ls.placement), ls.port)
	}
	for _, a := range slices.Sorted(maps.Keys(w.spec.aliases)) {
		as := w.spec.aliases[a]
		p("  alias %q {\n    lane      = %q\n    fallbacks = [%s]\n  }", a, as.lane, quoted(as.fallbacks))
	}
	p("  profile \"day\" {\n    cordon = [%s]\n  }", quoted(w.spec.cordon))
	p("  profile \"night\" {\n    cordon = [%s]", quoted(w.spec.cordon))
	if _, ok := w.spec.lanes["coder"]; ok {
		p("    lane \"coder\" {\n      residency = \"on-demand\"\n    }")
	}
	p("  }")
	if w.spec.night {
		p(`  active_profile = "night"`)
	} else {
		p(`  active_profile = "day"`)
	}
	p("  gateway {\n    plugin = \"haproxy\"\n  }")
	stateDir := ""
	if d := os.Getenv("POOLC_WALK_STATE_DIR"); d != "" {
		// Not the README's default: for a walk by hand past a failure of
		// the relative default.
		stateDir = fmt.Sprintf("\n      state_dir   = %q", d)
	}
	p("  plugin \"llama\" {\n    builtin = true\n    config = {\n      known_hosts = %q\n      key_file    = %q\n      no_agent    = true%s\n    }\n  }", w.known, w.key, stateDir)
	p("  plugin \"haproxy\" {\n    builtin = true\n    config = {\n      admin_socket  = %q\n      map_file      = %q\n      state_file    = %q\n      config_file   = %q\n      master_socket = %q\n      bind          = %q\n    }\n  }",
		w.gw.admin, w.gw.mapFile, w.gw.state, w.gw.cfg, w.gw.master, w.gw.bind)
	p("}")
	if err := os.WriteFile(filepath.Join(w.dir, "pool.hcl"), []byte(b.String()), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// poolcCmd is poolc with args in the walk's directory.
func (w *world) poolcCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(w.poolc, args...)
	cmd.Dir = w.dir
	return cmd
}

// runBound bounds one poolc command of the walk: every remote operation
// of poolc is bounded, so a command still running after it hangs. It is
// then sent SIGQUIT, which makes a Go program print its goroutines, and
// the walk fails with them.
const runBound = 15 * time.Minute

// run runs poolc and returns its output and exit code. A poolc that
// hangs (runBound), or that exits leaving a process that holds its output
// open, fails the walk with what it printed.
func (w *world) run(args ...string) (string, int) {
	cmd := w.poolcCmd(args...)
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Start(); err != nil {
		w.t.Fatalf("poolc %v: %v", args, err)
	}
	hung := time.AfterFunc(runBound, func() {
		cmd.Process.Signal(syscall.SIGQUIT)
		time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
	})
	err := cmd.Wait()
	if !hung.Stop() {
		w.fail(fmt.Sprintf("poolc %v still ran after %s; its goroutines (SIGQUIT):\n%s", args, runBound, out.String()))
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		w.fail(fmt.Sprintf("poolc %v exited, but a process it started held its output open %s after:\n%s", args, cmd.WaitDelay, out.String()))
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("poolc %v: %v", args, err)
	}
	return out.String(), 0
}

// startGateway starts HAProxy on its configuration file: first written
// by poolc gateway config (with the initial map), as an operator does
// once; after that the file is poolc's, and a restart runs it as it is.
func (w *world) startGateway(first bool) {
	if first {
		w.writeGatewayConfig()
	}
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		bin = "/usr/sbin/haproxy"
		if _, err := os.Stat(bin); err != nil {
			w.t.Fatal("haproxy not found: apt-get install haproxy (or bash .ci/install.d/haproxy.sh)")
		}
	}
	w.gw.log = &syncbuf.Buffer{}
	w.gw.cmd = exec.Command(bin, "-W", "-db", "-S", w.gw.master, "-f", w.gw.cfg)
	w.gw.cmd.Stdout, w.gw.cmd.Stderr = w.gw.log, w.gw.log
	if err := w.gw.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	exited := make(chan struct{})
	w.gw.exited = exited
	go func() { w.gw.cmd.Wait(); close(exited) }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := w.adminExec("show info"); err == nil {
			return
		}
		select {
		case <-exited:
			w.t.Fatalf("haproxy exited: %s", w.gw.log.String())
		default:
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("haproxy's admin socket did not answer: %s", w.gw.log.String())
		}
	}
}

// writeGatewayConfig writes HAProxy's configuration and the alias map
// with poolc gateway config.
func (w *world) writeGatewayConfig() {
	cmd := w.poolcCmd("gateway", "config", "--map-out", w.gw.mapFile, "pool.hcl")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cfg, err := cmd.Output()
	if err != nil {
		w.t.Fatalf("poolc gateway config: %v\n%s", err, stderr.String())
	}
	if err := os.WriteFile(w.gw.cfg, cfg, 0o644); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) stopGateway() {
	if w.gw.cmd == nil || w.gw.cmd.Process == nil {
		return
	}
	w.gw.cmd.Process.Kill()
	<-w.gw.exited
}

// reloadGateway has HAProxy's master load its configuration file again
// (SIGUSR2), as systemctl reload does.
func (w *world) reloadGateway() {
	w.gw.cmd.Process.Signal(syscall.SIGUSR2)
	// The new worker answers on the admin socket once it runs.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := w.adminExec("show info"); err == nil {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("haproxy did not come back from a reload: %s", w.gw.log.String())
		}
	}
}

// adminExec runs one command on HAProxy's admin socket, from outside poolc.
func (w *world) adminExec(command string) (string, error) {
	c, err := net.DialTimeout("unix", w.gw.admin, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "%s\n", command); err != nil {
		return "", err
	}
	var b bytes.Buffer
	_, err = b.ReadFrom(c)
	return b.String(), err
}

// stateDir is the llama actuator's state directory on this machine: the
// README's default, relative to the login's home, unless
// POOLC_WALK_STATE_DIR says otherwise.
func (w *world) stateDir() string {
	if d := os.Getenv("POOLC_WALK_STATE_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		w.t.Fatal(err)
	}
	return filepath.Join(home, ".poolc", "lanes")
}

// proc is a llama-server process of the walk's, read from /proc.
type proc struct {
	pid    int
	host   string
	port   int
	model  string // -m / --model; "" for a router
	router bool
}

// procs lists the llama-server processes of this walk's executable.
func (w *world) procs() []proc {
	var out []proc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || exe != w.exe {
			continue
		}
		if st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); strings.Contains(string(st), ") Z ") {
			continue
		}
		raw, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		p := proc{pid: pid}
		for i := 0; i+1 < len(args); i++ {
			switch args[i] {
			case "--host":
				p.host = args[i+1]
			case "--port":
				p.port, _ = strconv.Atoi(args[i+1])
			case "-m", "--model":
				p.model = args[i+1]
			case "--models-preset":
				p.router = true
			}
		}
		out = append(out, p)
	}
	return out
}

// killOurs kills every process of the walk's llama-server.
func (w *world) killOurs() {
	for _, p := range w.procs() {
		syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// nodeOf is the node name listening on host, "" if none.
func (w *world) nodeOf(host string) string {
	for i, s := range w.nodes {
		if s.Host == host {
			return w.names[i]
		}
	}
	return ""
}

// check verifies the invariants from outside poolc and returns what
// broke.
func (w *world) check() []string {
	var bad []string
	procs := w.procs()
	laneOfModel := map[string]string{}
	for l := range w.spec.lanes {
		laneOfModel[w.modelPath(l)] = l
	}
	// Processes: never two of one lane, none that no lane owns, an
	// on-demand lane in a router only, a lane only where it may be placed.
	perLane := map[string][]proc{}
	routers := map[string]int{}
	listening := map[string]proc{}
	for _, p := range procs {
		node := w.nodeOf(p.host)
		listening[net.JoinHostPort(p.host, strconv.Itoa(p.port))] = p
		if p.router {
			routers[node]++
			continue
		}
		l, ok := laneOfModel[strings.TrimSuffix(p.model, ".staged")]
		if !ok {
			// A staged upgrade's file lies beside the lane's own.
			for path, lane := range laneOfModel {
				if strings.HasPrefix(p.model, strings.TrimSuffix(path, ".gguf")) {
					l, ok = lane, true
				}
			}
		}
		if !ok {
			bad = append(bad, fmt.Sprintf("process %d on %s:%d serves %s, which no lane owns", p.pid, p.host, p.port, p.model))
			continue
		}
		perLane[l] = append(perLane[l], p)
		ls := w.spec.lanes[l]
		if !slices.Contains(ls.placement, node) || slices.Contains(w.spec.cordon, node) {
			bad = append(bad, fmt.Sprintf("lane %s runs on %s (pid %d), outside its placement %v or cordoned %v", l, node, p.pid, ls.placement, w.spec.cordon))
		}
	}
	for l, ps := range perLane {
		if len(ps) > 1 {
			bad = append(bad, fmt.Sprintf("lane %s has %d processes: %+v", l, len(ps), ps))
		}
		if w.residency(l) == "on-demand" {
			bad = append(bad, fmt.Sprintf("on-demand lane %s has a process of its own: %+v", l, ps))
		}
	}
	for l := range w.spec.lanes {
		if w.residency(l) == "keep-warm" && len(perLane[l]) == 0 {
			bad = append(bad, fmt.Sprintf("keep-warm lane %s has no process", l))
		}
	}
	for n, c := range routers {
		if c > 1 {
			bad = append(bad, fmt.Sprintf("%d routers on %s", c, n))
		}
	}
	// HAProxy: every server taking traffic is a process of ours serving
	// the backend's lane, and no backend of a lane gone takes traffic.
	state, err := w.adminExec("show servers state")
	if err != nil {
		bad = append(bad, "haproxy's admin socket: "+err.Error())
	}
	for _, s := range parseServers(state) {
		lane := ""
		for l := range w.spec.lanes {
			if haproxy.LaneBackendName(l) == s.backend {
				lane = l
			}
		}
		if !s.ready || s.backend == haproxy.Cloud {
			continue
		}
		p, ok := listening[net.JoinHostPort(s.addr, strconv.Itoa(s.port))]
		switch {
		case lane == "":
			bad = append(bad, fmt.Sprintf("haproxy server %s/%s (%s:%d) takes traffic for a lane the pool no longer has", s.backend, s.name, s.addr, s.port))
		case !ok:
			bad = append(bad, fmt.Sprintf("haproxy server %s/%s sends lane %s to %s:%d, where nothing of ours listens", s.backend, s.name, lane, s.addr, s.port))
		case !p.router && !strings.HasPrefix(p.model, strings.TrimSuffix(w.modelPath(lane), ".gguf")):
			bad = append(bad, fmt.Sprintf("haproxy server %s/%s sends lane %s to %s:%d, which serves %s", s.backend, s.name, lane, s.addr, s.port, p.model))
		}
	}
	// Files: no pidfile of a lane the pool no longer has or of a dead
	// process, no .part file.
	for _, n := range w.names {
		files, _ := filepath.Glob(filepath.Join(w.stateDir(), n, "*.pid"))
		for _, f := range files {
			lane, _, _ := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".pid"), "@")
			b, _ := os.ReadFile(f)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			alive := slices.ContainsFunc(procs, func(p proc) bool { return p.pid == pid })
			if _, ok := w.spec.lanes[lane]; (!ok && lane != "poolc-router") || !alive {
				bad = append(bad, fmt.Sprintf("pidfile %s (pid %d, alive %v) owned by no lane", f, pid, alive))
			}
		}
	}
	parts, _ := filepath.Glob(filepath.Join(w.dir, "models", "*.part"))
	for _, p := range parts {
		bad = append(bad, "left behind: "+p)
	}
	// Memory: what runs on a node fits its 24 GB (4 GB a model).
	used := map[string]int{}
	for _, p := range procs {
		if !p.router {
			used[w.nodeOf(p.host)] += 4
			continue
		}
		used[w.nodeOf(p.host)] += 4 * w.routerLoaded(p)
	}
	for n, gb := range used {
		if gb > 24 {
			bad = append(bad, fmt.Sprintf("%s runs %d GB of models, over its 24 GB", n, gb))
		}
	}
	return bad
}

// routerLoaded is how many models a router has loaded or loading, read
// from its GET /models.
func (w *world) routerLoaded(p proc) int {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(fmt.Sprintf("http://%s/models", net.JoinHostPort(p.host, strconv.Itoa(p.port))))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var ms struct {
		Data []struct{ Status struct{ Value string } }
	}
	json.NewDecoder(resp.Body).Decode(&ms)
	n := 0
	for _, m := range ms.Data {
		if m.Status.Value == "loaded" || m.Status.Value == "loading" {
			n++
		}
	}
	return n
}

// residency is lane's residency under the active profile.
func (w *world) residency(lane string) string {
	if w.spec.night && lane == "coder" {
		return "on-demand"
	}
	return w.spec.lanes[lane].residency
}

type server struct {
	backend, name, addr string
	port                int
	ready               bool
}

// parseServers reads `show servers state` by its header's column names.
func parseServers(out string) []server {
	var cols map[string]int
	var srvs []server
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			cols = map[string]int{}
			for i, c := range strings.Fields(strings.TrimPrefix(line, "#")) {
				cols[c] = i
			}
			continue
		}
		f := strings.Fields(line)
		if cols == nil || len(f) <= cols["srv_admin_state"] {
			continue
		}
		admin, _ := strconv.Atoi(f[cols["srv_admin_state"]])
		port, _ := strconv.Atoi(f[cols["srv_port"]])
		// srv_admin_state: 0x01|0x02|0x20 maintenance, 0x08|0x10 drain.
		srvs = append(srvs, server{backend: f[cols["be_name"]], name: f[cols["srv_name"]], addr: f[cols["srv_addr"]], port: port, ready: admin&(0x01|0x02|0x20|0x08|0x10) == 0})
	}
	return srvs
}

// faults are injected between or during applies, one in three changes.
var faults = []string{"sigkill-poolc", "haproxy-reload", "haproxy-restart", "kill-lane", "sshd-down"}

// walk brings the fleet up, then makes n changes, each checked.
func (w *world) walk(n int) {
	began := time.Now()
	w.history = append(w.history, "bring-up")
	w.converge("bring-up", "")
	if bad := w.check(); len(bad) > 0 {
		w.fail("after the bring-up: " + strings.Join(bad, "; "))
	}
	for i := 1; i <= n; i++ {
		aliasesBefore := slices.Sorted(maps.Keys(w.spec.aliases))
		desc := w.mutate()
		fault := ""
		if w.rng.Intn(3) == 0 {
			fault = faults[w.rng.Intn(len(faults))]
		}
		w.history = append(w.history, strings.TrimSpace(desc+" "+fault))
		w.counts.changes++
		w.step(desc, fault, aliasesBefore)
	}
	w.t.Logf("fleet walk, seed %d: %d changes, %d requests served, %d failed (in interruptions the plan reported or faults), %d applies (%.2f a change), %s",
		w.seed, w.counts.changes, w.counts.served, w.counts.failed, w.counts.applies, float64(w.counts.applies)/float64(w.counts.changes+1), time.Since(began).Round(time.Second))
}

// fail stops the walk, naming the seed and the prefix that reproduces
// the failure.
func (w *world) fail(msg string) {
	w.t.Helper()
	var b strings.Builder
	for i, h := range w.history {
		fmt.Fprintf(&b, "  %d. %s\n", i, h)
	}
	w.t.Fatalf("seed %d, change %d: %s\nthe walk's prefix that fails (every shorter one passed; POOLC_WALK_SEED=%d POOLC_WALK_STEPS=%d):\n%s",
		w.seed, len(w.history)-1, msg, w.seed, len(w.history)-1, b.String())
}

// mutate changes the spec at random and says how.
func (w *world) mutate() string {
	lanes := slices.Sorted(maps.Keys(w.spec.lanes))
	lane := lanes[w.rng.Intn(len(lanes))]
	for {
		switch w.rng.Intn(10) {
		case 0:
			ls := w.spec.lanes[lane]
			old := ls.placement
			for slices.Equal(ls.placement, old) {
				ls.placement = w.somePlacement()
			}
			return fmt.Sprintf("move %s %v → %v", lane, old, ls.placement)
		case 1:
			ls := w.spec.lanes[lane]
			old := ls.residency
			others := slices.DeleteFunc([]string{"keep-warm", "preferred", "on-demand"}, func(r string) bool { return r == old })
			ls.residency = others[w.rng.Intn(2)]
			return fmt.Sprintf("residency of %s %s → %s", lane, old, ls.residency)
		case 2:
			if len(lanes) >= 7 {
				continue
			}
			name := fmt.Sprintf("extra%d", len(w.history))
			res := []string{"keep-warm", "preferred", "on-demand"}[w.rng.Intn(3)]
			w.addLane(name, res)
			w.spec.aliases["x"+name] = &aliasSpec{lane: name, fallbacks: []string{lane}}
			return fmt.Sprintf("add lane %s (%s, %v) with alias x%s", name, res, w.spec.lanes[name].placement, name)
		case 3:
			if len(lanes) <= 3 {
				continue
			}
			delete(w.spec.lanes, lane)
			delete(w.spec.models, lane)
			for a, as := range w.spec.aliases {
				as.fallbacks = slices.DeleteFunc(as.fallbacks, func(f string) bool { return f == lane })
				if as.lane == lane {
					delete(w.spec.aliases, a)
				}
			}
			return "remove lane " + lane + " and its aliases"
		case 4:
			m := w.spec.models[lane]
			m.ctx = 6144 - m.ctx
			return fmt.Sprintf("args of %s's model: --ctx-size %d", lane, m.ctx)
		case 5:
			w.spec.models[lane].version++
			return fmt.Sprintf("upgrade %s's weights to v%d under the same name", lane, w.spec.models[lane].version)
		case 6:
			if len(w.spec.cordon) > 0 {
				continue
			}
			w.spec.cordon = []string{w.names[w.rng.Intn(len(w.names))]}
			return "cordon " + w.spec.cordon[0]
		case 7:
			if len(w.spec.cordon) == 0 {
				continue
			}
			n := w.spec.cordon[0]
			w.spec.cordon = nil
			return "uncordon " + n
		case 8:
			w.spec.night = !w.spec.night
			if w.spec.night {
				return "profile day → night (coder on-demand)"
			}
			return "profile night → day"
		case 9:
			aliases := slices.Sorted(maps.Keys(w.spec.aliases))
			if len(aliases) > 3 && w.rng.Intn(2) == 0 {
				a := aliases[w.rng.Intn(len(aliases))]
				delete(w.spec.aliases, a)
				return "remove alias " + a
			}
			a := fmt.Sprintf("a%d", len(w.history))
			w.spec.aliases[a] = &aliasSpec{lane: lane}
			return fmt.Sprintf("add alias %s → %s", a, lane)
		}
	}
}

// step applies the spec as changed under load, with fault, and checks.
func (w *world) step(desc, fault string, aliasesBefore []string) {
	// A lane added or removed needs no hand on HAProxy: poolc rewrites
	// the configuration file and reloads it through the master CLI.
	w.render()
	var aliases []string
	for _, a := range aliasesBefore {
		if as, ok := w.spec.aliases[a]; ok && w.laneExistedFor(as) {
			aliases = append(aliases, a)
		}
	}
	loads := map[string]*loadgen.Load{}
	base := "http://" + w.gw.bind
	for _, a := range aliases {
		loads[a] = loadgen.Start(base, a, 2, 10)
	}
	for _, a := range aliases {
		if !loads[a].WaitServed(1, time.Minute) {
			for _, l := range loads {
				l.Stop()
			}
			w.fail(fmt.Sprintf("before %q: alias %s served nothing in a minute (%d failed)", desc, a, loads[a].Failed()))
		}
	}
	excused := map[string]bool{}
	switch fault {
	case "haproxy-restart":
		w.stopGateway()
		w.startGateway(false)
		for _, a := range aliases {
			excused[a] = true // a restart cuts what HAProxy carries
		}
	case "haproxy-reload":
		w.reloadGateway()
	case "kill-lane":
		var own []proc
		for _, p := range w.procs() {
			if !p.router {
				own = append(own, p)
			}
		}
		if len(own) > 0 {
			p := own[w.rng.Intn(len(own))]
			syscall.Kill(p.pid, syscall.SIGKILL)
			for a := range w.spec.aliases {
				excused[a] = true // its streams die with it, whichever alias reached it
			}
		}
	case "sshd-down":
		w.sshdDown()
	case "sigkill-poolc":
		cmd := w.poolcCmd("apply", "--auto-approve", "pool.hcl")
		if err := cmd.Start(); err != nil {
			w.t.Fatal(err)
		}
		time.Sleep(time.Duration(200+w.rng.Intn(4000)) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		w.counts.applies++
	}
	interrupted := w.converge(desc, fault)
	bad := w.check()
	for _, a := range aliases {
		r := loads[a].Stop()
		w.counts.served += r.Served
		w.counts.failed += r.Failed
		if r.Failed > 0 && !interrupted && !excused[a] {
			bad = append(bad, fmt.Sprintf("%d of %d requests for %s failed with no interruption reported: %q", r.Failed, r.Failed+r.Served, a, r.Errors))
		}
	}
	if len(bad) > 0 {
		w.fail(strings.Join(bad, "\n  ") + "\nthe change's applies said:\n" + strings.Join(w.applied, "\n---\n") + "\nHAProxy said:\n" + w.gw.log.String())
	}
	w.t.Logf("change %d: %s (fault %q, interruption %v): converged, invariants hold", len(w.history)-1, desc, fault, interrupted)
}

// laneExistedFor reports whether an alias's lane is still in the pool.
func (w *world) laneExistedFor(as *aliasSpec) bool {
	_, ok := w.spec.lanes[as.lane]
	return ok
}

// converge applies the pool and checks that a refreshed plan is empty
// after one run, or two after a fault. It reports whether the apply
// needed --allow-interruption (the plan said an alias goes unserved).
func (w *world) converge(desc, fault string) bool {
	w.applied = nil
	out, code := w.run("apply", "--auto-approve", "pool.hcl")
	w.applied = append(w.applied, out)
	w.counts.applies++
	interrupted := false
	if code != 0 && strings.Contains(out, "--allow-interruption") {
		interrupted = true
		out, code = w.run("apply", "--auto-approve", "--allow-interruption", "pool.hcl")
		w.applied = append(w.applied, out)
		w.counts.applies++
	}
	if code != 0 {
		w.fail(fmt.Sprintf("%q (fault %q): poolc apply exit %d:\n%s", desc, fault, code, out))
	}
	plan, code := w.run("plan", "--detailed-exitcode", "pool.hcl")
	if code != 0 && fault != "" {
		w.t.Logf("%q after fault %s: the refreshed plan (exit %d) wants one more apply:\n%s", desc, fault, code, plan)
		out, code = w.run("apply", "--auto-approve", "--allow-interruption", "pool.hcl")
		w.applied = append(w.applied, out)
		w.counts.applies++
		if code != 0 {
			w.fail(fmt.Sprintf("%q (fault %q): the second apply exit %d:\n%s", desc, fault, code, out))
		}
		plan, code = w.run("plan", "--detailed-exitcode", "pool.hcl")
	}
	if code != 0 {
		w.fail(fmt.Sprintf("%q (fault %q): the apply did not converge: the refreshed plan (exit %d):\n%s\nthe apply said:\n%s", desc, fault, code, plan, out))
	}
	return interrupted
}

// sshdDown stops one node's sshd: a plan must then refuse rather than
// move lanes off the node it cannot see; the sshd comes back after.
func (w *world) sshdDown() {
	i := w.rng.Intn(len(w.nodes))
	before := w.ownPIDs()
	w.nodes[i].Stop()
	plan, code := w.run("plan", "pool.hcl")
	out, acode := w.run("apply", "--auto-approve", "--allow-interruption", "pool.hcl")
	w.counts.applies++
	after := w.ownPIDs()
	w.nodes[i].Restart(w.t)
	if code == 0 {
		w.fail(fmt.Sprintf("with %s's sshd down, poolc plan exit 0 (it must refuse, not reshuffle):\n%s", w.names[i], plan))
	}
	if acode == 0 {
		w.fail(fmt.Sprintf("with %s's sshd down, poolc apply exit 0:\n%s", w.names[i], out))
	}
	if !slices.Equal(before, after) {
		w.fail(fmt.Sprintf("with %s's sshd down, a refused apply changed the lane processes %v → %v:\n%s", w.names[i], before, after, out))
	}
}

// ownPIDs lists the lanes' own processes, sorted.
func (w *world) ownPIDs() []int {
	var pids []int
	for _, p := range w.procs() {
		if !p.router {
			pids = append(pids, p.pid)
		}
	}
	sort.Ints(pids)
	return pids
}
