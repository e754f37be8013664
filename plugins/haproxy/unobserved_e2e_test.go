//go:build e2e

package haproxy

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"poolc.dev/poolc/internal/testing/etcdtest"
	"poolc.dev/poolc/internal/testing/loadgen"
	"poolc.dev/poolc/internal/testing/testsshd"
)

// anyStep matches apply's report of a step that started, and plan's
// listing of a start or stop.
var anyStep = regexp.MustCompile(`\] +started |(?m)^  [+-] (start|stop) `)

// TestE2EANodeWhoseSSHDStoppedStopsPlanAndApply: n3 runs both lanes, then
// its sshd stops while its lanes keep serving. Unknown is not absent: plan
// and apply exit 1 naming n3, the cause and --assume-down, plan no step,
// and no second copy of a lane starts. Said down with --assume-down, n3's
// cognition moves to n1 and chat is served from there.
func TestE2EANodeWhoseSSHDStoppedStopsPlanAndApply(t *testing.T) {
	f := newFleet(t)
	f.writePool(`"n3", "n1"`)
	f.apply()
	before := f.lanePIDs()
	if before["n3/cognition"] == 0 || before["n3/scribe"] == 0 {
		t.Fatalf("lane processes after the bring-up: %v", before)
	}
	f.nodes[2].Stop()
	for _, args := range [][]string{{"plan", "pool.hcl"}, {"apply", "--auto-approve", "pool.hcl"}} {
		out, code := f.run(args...)
		t.Logf("poolc %s with n3's sshd stopped: exit %d\n%s", args[0], code, out)
		if code != 1 || !strings.Contains(out, `node "n3" (plugin llama): refused`) || !strings.Contains(out, f.nodes[2].Addr()) ||
			!strings.Contains(out, "--assume-down n3") || anyStep.MatchString(out) || strings.Contains(out, "Apply complete") {
			t.Errorf("poolc %s with n3's sshd stopped: exit %d, want 1 naming n3 and no step\n%s", args[0], code, out)
		}
	}
	if after := f.lanePIDs(); !maps.Equal(after, before) {
		t.Errorf("lane processes changed while n3 could not be observed: %v, were %v", after, before)
	}
	f.checkSafe("with n3 unobserved")

	out, code := f.run("apply", "--auto-approve", "--assume-down", "n3", "pool.hcl")
	t.Logf("poolc apply --assume-down n3: exit %d\n%s", code, out)
	for _, want := range []string{"start:cognition@n1", "route:chat", "Taken as down:", "n3 (--assume-down; not observed: refused)"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply --assume-down n3 (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
	if strings.Contains(out, "stop:cognition@n3") || strings.Contains(out, "drain:cognition@n3") {
		t.Errorf("apply --assume-down n3 sends steps to n3:\n%s", out)
	}
	if pids := f.lanePIDs(); pids["n1/cognition"] == 0 {
		t.Errorf("after apply --assume-down n3, lane processes %v", pids)
	}
	if err := loadgen.Chat(t.Context(), http.DefaultClient, f.proxy.base(), "chat", 3); err != nil {
		t.Errorf("chat after the move off n3: %v", err)
	}
}

// TestE2EAChangedOrUnknownHostKeyRefusesBeforeAnythingRuns: a saved plan
// moves cognition from n1 to n2; then n3 presents a host key known_hosts
// does not list for it. Applying the saved plan, planning and applying
// again all stop before any step, naming n3, the fingerprint it presents
// and the known_hosts line; nothing moves. With n3's line gone, the host
// is unknown, and the message says how to add it.
func TestE2EAChangedOrUnknownHostKeyRefusesBeforeAnythingRuns(t *testing.T) {
	f := newFleet(t)
	f.writePool(`"n1", "n2"`)
	f.apply()
	f.writePool(`"n2", "n1"`)
	if out, code := f.run("plan", "--out", "move.json", "pool.hcl"); code != 0 || !strings.Contains(out, "start cognition@n2") {
		t.Fatalf("plan --out: exit %d\n%s", code, out)
	}
	before := f.lanePIDs()
	n3 := f.nodes[2]
	presented := "ssh-ed25519 " + ssh.FingerprintSHA256(n3.HostKey)
	lines := strings.SplitAfter(readFile(t, f.known), "\n")
	if len(lines) < 3 || !strings.Contains(lines[2], strconv.Itoa(n3.Port)) {
		t.Fatalf("known_hosts has no line 3 for n3:\n%s", strings.Join(lines, ""))
	}
	other := testsshd.NewKey(t, filepath.Join(t.TempDir(), "other"))
	lines[2] = n3.KnownHostsLine(other) + "\n"
	writeFile(t, f.known, strings.Join(lines, ""))

	for _, args := range [][]string{{"apply", "move.json"}, {"plan", "pool.hcl"}, {"apply", "--auto-approve", "pool.hcl"}} {
		out, code := f.run(args...)
		t.Logf("poolc %s with n3's key changed: exit %d\n%s", strings.Join(args, " "), code, out)
		for _, want := range []string{`node "n3" (plugin llama): host-key-changed`, n3.Addr(), "has CHANGED", presented, f.known + ":3", "ssh-keygen -R"} {
			if !strings.Contains(out, want) {
				t.Errorf("poolc %s with n3's key changed (exit %d) lacks %q:\n%s", strings.Join(args, " "), code, want, out)
			}
		}
		if code != 1 || anyStep.MatchString(out) || strings.Contains(out, "stale") {
			t.Errorf("poolc %s with n3's key changed: exit %d, want 1, no step, not stale\n%s", strings.Join(args, " "), code, out)
		}
	}
	if after := f.lanePIDs(); !maps.Equal(after, before) {
		t.Errorf("lane processes changed with n3's key changed: %v, were %v", after, before)
	}

	writeFile(t, f.known, lines[0]+lines[1])
	out, code := f.run("plan", "pool.hcl")
	scan := "ssh-keyscan -p " + strconv.Itoa(n3.Port) + " " + n3.Host + " >> " + f.known
	for _, want := range []string{`node "n3" (plugin llama): host-key-unknown`, presented, scan} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("plan with n3's key unknown: exit %d, want 1 and %q\n%s", code, want, out)
		}
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestE2EANodeDownByItsLeaseMovesItsLanes: the pool keeps its state in
// etcd and n3 is enrolled, its agent keeping a lease. n3 runs cognition.
// Then n3's sshd stops and its agent dies: once the lease lapses, n3 is
// down by its membership, so a plain apply (no --assume-down) moves
// cognition to n1, and the plan says why.
func TestE2EANodeDownByItsLeaseMovesItsLanes(t *testing.T) {
	f := newFleet(t)
	etcd := etcdtest.Start(t, 1)
	f.writePool(`"n3", "n1"`)
	pool := readFile(t, filepath.Join(f.dir, "pool.hcl"))
	state := fmt.Sprintf(`pool "fleet" {
  state {
    backend   = "etcd"
    endpoints = [%q]
    prefix    = "/e2e/fleet"
    lease_ttl = 6
  }`, etcd.Endpoints()[0])
	writeFile(t, filepath.Join(f.dir, "pool.hcl"), strings.Replace(pool, `pool "fleet" {`, state, 1))
	f.apply()

	token, code := f.run("node", "token", "create", "--node", "n3", "pool.hcl")
	if code != 0 {
		t.Fatalf("node token create: exit %d\n%s", code, token)
	}
	tok := regexp.MustCompile(`poolc-join-[A-Za-z0-9_-]+`).FindString(token)
	if out, code := f.run("node", "join", "--token", tok, "--node", "n3", "--credential", "n3.cred", "pool.hcl"); code != 0 {
		t.Fatalf("node join: exit %d\n%s", code, out)
	}
	agent := exec.Command(f.poolc, "node", "agent", "--credential", "n3.cred", "--interval", "200ms", "pool.hcl")
	agent.Dir = f.dir
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	waitNode(t, f, "up")
	if pids := f.lanePIDs(); pids["n3/cognition"] == 0 {
		t.Fatalf("lane processes %v", pids)
	}

	f.nodes[2].Stop()
	agent.Process.Kill()
	agent.Wait()
	waitNode(t, f, "down")
	out, code := f.run("apply", "--auto-approve", "pool.hcl")
	t.Logf("apply with n3 down by its lease: exit %d\n%s", code, out)
	for _, want := range []string{"start:cognition@n1", "route:chat", "n3 (membership lease; not observed: refused)"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply with n3 down by its lease (exit %d) lacks %q", code, want)
		}
	}
	if pids := f.lanePIDs(); pids["n1/cognition"] == 0 {
		t.Errorf("after the apply, lane processes %v", pids)
	}
	if err := loadgen.Chat(t.Context(), http.DefaultClient, f.proxy.base(), "chat", 3); err != nil {
		t.Errorf("chat after the move off n3: %v", err)
	}
}

// waitNode waits up to a minute for poolc node list to show n3 up or down.
func waitNode(t *testing.T, f *fleet, status string) {
	t.Helper()
	row := regexp.MustCompile(`(?m)^n3 +` + status + ` `)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		out, _ := f.run("node", "list", "pool.hcl")
		if row.MatchString(out) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("n3 is not %s after a minute:\n%s", status, out)
		}
	}
}
