//go:build e2e

package haproxy

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"poolc.dev/poolc/internal/llamastub"
	"poolc.dev/poolc/internal/loadgen"
	"poolc.dev/poolc/internal/testsshd"
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
}

func newFleet(t *testing.T) *fleet {
	f := &fleet{t: t, dir: t.TempDir()}
	f.poolc = filepath.Join(f.dir, "poolc")
	if out, err := exec.Command("go", "build", "-o", f.poolc, "poolc.dev/poolc/cmd/poolc").CombinedOutput(); err != nil {
		t.Fatalf("building poolc: %v\n%s", err, out)
	}
	stub, err := llamastub.Build(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	f.stub = stub
	var known bytes.Buffer
	for i := 0; i < 3; i++ {
		s := testsshd.Start(t, testsshd.OnAddress("127.0.0."+strconv.Itoa(i+2)))
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
	f.known = filepath.Join(f.dir, "known_hosts")
	os.WriteFile(f.known, known.Bytes(), 0o600)

	// The models' source, prefetched to every node they run on. The nodes
	// share this machine's files, so each lane has a model path of its
	// own: two nodes' prefetches never write one file at once, and a lane
	// moving to another node finds its file there with the right sha256.
	data := make([]byte, 2_000_000)
	rand.Read(data)
	copy(data, "GGUF")
	sum := sha256.Sum256(data)
	f.src, f.sum = filepath.Join(f.dir, "src", "q.gguf"), hex.EncodeToString(sum[:])
	os.MkdirAll(filepath.Dir(f.src), 0o755)
	os.WriteFile(f.src, data, 0o644)

	spec := testSpec(t, []LaneBackend{{Lane: "cognition"}, {Lane: "scribe"}},
		[]AliasRoute{{Alias: "chat", Lane: "cognition"}, {Alias: "notes", Lane: "scribe"}})
	f.proxy = startProxy(t, spec)
	t.Cleanup(f.stopLanes)
	return f
}

// writePool writes the pool with cognition's placement.
func (f *fleet) writePool(placement string) {
	var nodes strings.Builder
	for i, s := range f.nodes {
		fmt.Fprintf(&nodes, `
  node "n%d" {
    address   = %q
    ssh_port  = %d
    ssh_user  = %q
    memory_gb = 64
    runtime   = "llama"
  }`, i+1, s.Host, s.Port, s.User)
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
    residency = "keep-warm"
    placement = [%s]
    port      = %d
  }
  lane "scribe" {
    model     = "q-notes"
    residency = "keep-warm"
    placement = ["n3"]
    port      = %d
  }
  alias "chat" {
    lane = "cognition"
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
      state_dir    = %q
      env          = { LLAMASTUB_LOAD_BYTES_PER_SEC = "8000000", LLAMASTUB_TOKEN_INTERVAL = "10ms" }
      stop_grace_seconds = 5
    }
  }
  plugin "haproxy" {
    builtin = true
    config = {
      admin_socket = %q
      map_file     = %q
      state_file   = %q
    }
  }
}
`, nodes.String(), filepath.Join(f.dir, "models", "q.gguf"), f.src, f.sum,
		filepath.Join(f.dir, "models", "q-notes.gguf"), f.src, f.sum, placement, f.port("cognition"), f.port("scribe"),
		f.known, f.keyFile, f.stub, filepath.Join(f.dir, "lanes"), spec.AdminSocket, spec.MapFile, spec.StateFile)
	if err := os.WriteFile(filepath.Join(f.dir, "pool.hcl"), []byte(pool), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

var lanePorts = map[string]int{}

// port is a lane's port, free on every node address.
func (f *fleet) port(lane string) int {
	if p, ok := lanePorts[lane]; ok {
		return p
	}
	lanePorts[lane] = freePort(f.t)
	return lanePorts[lane]
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

// planIsEmpty asserts a refreshed plan has nothing to do.
func (f *fleet) planIsEmpty(when string) {
	f.t.Helper()
	out, code := f.run("plan", "--detailed-exitcode", "pool.hcl")
	if code != 0 {
		f.t.Fatalf("plan %s: exit %d, want 0 (no changes)\n%s", when, code, out)
	}
}

// lanePIDs lists the live lane processes under the fleet's state
// directory, by node and lane.
func (f *fleet) lanePIDs() map[string]int {
	pids := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(f.dir, "lanes", "*", "*.pid"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && processLives(pid) {
			pids[filepath.Base(filepath.Dir(p))+"/"+strings.TrimSuffix(filepath.Base(p), ".pid")] = pid
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
	out := f.apply()
	for _, want := range []string{"prefetch:q@n1", "prefetch:q-notes@n3", "start:cognition@n1", "start:scribe@n3", "route:chat", "route:notes"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %s:\n%s", want, out)
		}
	}
	f.planIsEmpty("after the bring-up")
	if pids := f.lanePIDs(); len(pids) != 2 || pids["n1/cognition"] == 0 || pids["n3/scribe"] == 0 {
		t.Fatalf("lane processes %v", pids)
	}

	// The move: cognition prefers n2 now.
	load := loadgen.Start(f.proxy.base(), "chat", 6, 10)
	if !load.WaitServed(30, 30*time.Second) {
		t.Fatalf("no traffic before the move: %d failed", load.Failed())
	}
	f.writePool(`"n2", "n1"`)
	start := time.Now()
	out = f.apply()
	moved := time.Since(start)
	if !load.WaitServed(30, 30*time.Second) {
		t.Fatalf("no traffic after the move: %d failed", load.Failed())
	}
	res := load.Stop()
	t.Logf("lane move under load: %d requests served, %d failed, in %s; the apply took %s:\n%s",
		res.Served, res.Failed, res.Duration.Round(time.Millisecond), moved.Round(time.Millisecond), out)
	if res.Failed != 0 {
		t.Fatalf("%d requests failed or were cut during the move: %q", res.Failed, res.Errors)
	}
	if pids := f.lanePIDs(); len(pids) != 2 || pids["n2/cognition"] == 0 || pids["n1/cognition"] != 0 {
		t.Fatalf("after the move, lane processes %v", pids)
	}
	f.planIsEmpty("after the move")

	// A lane killed by hand is drift.
	syscall.Kill(f.lanePIDs()["n3/scribe"], syscall.SIGKILL)
	time.Sleep(200 * time.Millisecond)
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
