package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
func serveEtcd(t *testing.T, bin, data, client, peer string) *exec.Cmd {
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
		t.Fatalf("poolc etcd serve: %q %v\n%s", line, err, &errOut)
	}
	go io.Copy(io.Discard, out)
	return cmd
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
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("poolc etcd serve did not stop on SIGTERM")
	}
}

// The one-member etcd of poolc etcd serve holds a pool's state, and
// serves it again when started again on its data directory.
func TestEtcdServeKeepsAPoolsStateAcrossARestart(t *testing.T) {
	bin := poolcBinary(t)
	dir := t.TempDir()
	data, client, peer := filepath.Join(dir, "etcd"), freeAddr(t), freeAddr(t)
	pool := filepath.Join(dir, "pool")
	os.Mkdir(pool, 0o755)
	if err := os.WriteFile(filepath.Join(pool, "pool.hcl"), []byte(strings.Replace(nodePool, "$ETCD", client, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	etcd := serveEtcd(t, bin, data, client, peer)
	out, err := run(t, bin, "apply", "--auto-approve", pool)
	if err != nil || !strings.Contains(out, "Apply complete") {
		stopEtcd(t, etcd)
		t.Fatalf("apply: %v\n%s", err, out)
	}
	stopEtcd(t, etcd)
	if _, err := os.Stat(filepath.Join(pool, "poolc.state.json")); err == nil {
		t.Error("the state went to a file beside the pool, not to etcd")
	}
	etcd = serveEtcd(t, bin, data, client, peer)
	defer stopEtcd(t, etcd)
	if out, err := run(t, bin, "plan", "--detailed-exitcode", pool); err != nil || !strings.Contains(out, "No changes.") {
		t.Fatalf("plan after etcd started again: %v\n%s", err, out)
	}
	if out, err := run(t, bin, "etcd", "serve", "--listen", "0.0.0.0:2379"); err == nil || !strings.Contains(out, "listens on loopback only") {
		t.Errorf("etcd serve on every interface: %v\n%s", err, out)
	}
}
