package etcdstate

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/poolctest"
)

// freeAddr is a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// serveEtcd starts poolc etcd serve on data and waits until it serves.
// It returns nil and what the member printed when it could not listen:
// another process took one of the addresses since they were found free.
func serveEtcd(t *testing.T, bin, data, client, peer string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, "etcd", "serve", "--data-dir", data, "--listen", client, "--listen-peer", peer)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "etcd is serving on "+client+", its data in "+data) {
		cmd.Process.Kill()
		cmd.Wait()
		if strings.Contains(errOut.String(), "address already in use") {
			return nil, errOut.String()
		}
		t.Fatalf("poolc etcd serve: %q %v\n%s", line, err, &errOut)
	}
	go io.Copy(io.Discard, out)
	return cmd, ""
}

// stopEtcd stops poolc etcd serve with SIGTERM: it exits 0.
func stopEtcd(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("poolc etcd serve after SIGTERM: %v", err)
		}
	case <-time.After(poolctest.WaitLimit):
		cmd.Process.Kill()
		t.Fatal("poolc etcd serve did not stop on SIGTERM")
	}
}

// The one-member etcd of poolc etcd serve holds a pool's state, and
// serves it again when started again on its data directory.
func TestEtcdServeKeepsAPoolsStateAcrossARestart(t *testing.T) {
	bin := poolctest.Binary(t)
	poolctest.Build(t, "cmd/poolc-etcd") // beside poolc, as go install puts it
	dir := t.TempDir()
	// Addresses found free may be taken by another process before the
	// member listens on them (test packages run in parallel): then the
	// member starts again on new ones, as internal/testing/etcdtest does.
	var etcd *exec.Cmd
	var data, client, peer, refused string
	for attempt := 0; etcd == nil; attempt++ {
		if attempt == 5 {
			t.Fatalf("poolc etcd serve found its addresses taken %d times:\n%s", attempt, refused)
		}
		data, client, peer = filepath.Join(dir, fmt.Sprintf("etcd-%d", attempt)), freeAddr(t), freeAddr(t)
		etcd, refused = serveEtcd(t, bin, data, client, peer)
	}
	pool := poolctest.WriteNodePool(t, dir, client)
	out, err := poolctest.Run(t, bin, "apply", "--auto-approve", pool)
	if err != nil || !strings.Contains(out, "Apply complete") {
		stopEtcd(t, etcd)
		t.Fatalf("apply: %v\n%s", err, out)
	}
	stopEtcd(t, etcd)
	if _, err := os.Stat(filepath.Join(pool, "poolc.state.json")); err == nil {
		t.Error("the state went to a file beside the pool, not to etcd")
	}
	// The pool names the client address, so the member starts again on
	// the same ones, which it had until now.
	if etcd, refused = serveEtcd(t, bin, data, client, peer); etcd == nil {
		t.Fatalf("poolc etcd serve could not listen again on %s and %s:\n%s", client, peer, refused)
	}
	defer stopEtcd(t, etcd)
	if out, err := poolctest.Run(t, bin, "plan", "--detailed-exitcode", pool); err != nil || !strings.Contains(out, "No changes.") {
		t.Fatalf("plan after etcd started again: %v\n%s", err, out)
	}
	if out, err := poolctest.Run(t, bin, "etcd", "serve", "--listen", "0.0.0.0:2379"); err == nil || !strings.Contains(out, "listens on loopback only") {
		t.Errorf("etcd serve on every interface: %v\n%s", err, out)
	}
}

// Without poolc-etcd beside it or on PATH, poolc etcd serve fails at
// once, saying how to install it; bad flags are refused before that.
func TestEtcdServeWithoutItsMemberProgramSaysHowToGetIt(t *testing.T) {
	alone := filepath.Join(t.TempDir(), "poolc")
	data, err := os.ReadFile(poolctest.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(alone, "etcd", "serve", "--data-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "PATH="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "go install ./cmd/poolc-etcd") {
		t.Errorf("etcd serve without poolc-etcd: exit %d (%v), want 1 and how to install it:\n%s", code, err, out)
	}
	cmd = exec.Command(alone, "etcd", "serve", "--listen", "0.0.0.0:2379")
	cmd.Env = append(os.Environ(), "PATH="+t.TempDir())
	if out, _ := cmd.CombinedOutput(); !strings.Contains(string(out), "listens on loopback only") {
		t.Errorf("etcd serve on every interface, without poolc-etcd: want the address refused first:\n%s", out)
	}
}
