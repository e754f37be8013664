// Package etcdstate tests the real poolc binary with its state in etcd
// (an embedded cluster on loopback, or poolc etcd serve): two applies
// never run at once, a stale write is refused, and the state outlives a
// restart of etcd.
package etcdstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"poolc.dev/poolc/internal/testing/etcdtest"
	"poolc.dev/poolc/internal/testing/poolctest"
	"poolc.dev/poolc/runner/store"
)

// lockHolder returns the lock info under prefix once the lock is held,
// failing the test when it is not held within poolctest.WaitLimit.
func lockHolder(t *testing.T, cli *clientv3.Client, prefix string, out fmt.Stringer) store.LockInfo {
	t.Helper()
	for deadline := time.Now().Add(poolctest.WaitLimit); ; time.Sleep(10 * time.Millisecond) {
		if r, err := cli.Get(context.Background(), prefix+"lockinfo"); err == nil && len(r.Kvs) > 0 {
			var info store.LockInfo
			if err := json.Unmarshal(r.Kvs[0].Value, &info); err != nil {
				t.Fatalf("the lock info: %v\n%s", err, r.Kvs[0].Value)
			}
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("the apply never took the lock:\n%s", out)
		}
	}
}

// Two applies from two processes against one etcd: while the first holds
// the lock, the second fails at once, exit 1, with the first one's lock
// info; started with --lock-timeout, it waits for the first and finds its
// work done.
func TestEtcdTwoAppliesNeverRunAtOnce(t *testing.T) {
	bin := poolctest.Binary(t)
	c := etcdtest.Start(t, 1)
	// The first apply is stopped (SIGSTOP) while it holds the lock, so
	// that it still holds it whenever the second one looks, however
	// loaded the machine: its lease (renewed by no one meanwhile) must
	// outlive the second apply.
	const ttl = 120
	dir := poolctest.EtcdSparkLab(t, t.TempDir(), 0.01, c.Endpoints(), "/two/", ttl)
	first, firstOut := poolctest.StartApply(t, bin, dir)
	t.Cleanup(func() { first.Process.Signal(syscall.SIGCONT) })
	holder := lockHolder(t, c.Client(t), "/two/", firstOut)
	if holder.PID != first.Process.Pid {
		t.Fatalf("the lock is held by pid %d, not by the first apply (%d)", holder.PID, first.Process.Pid)
	}
	if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	second, secondOut := poolctest.StartApply(t, bin, dir)
	// It ends although the holder never lets go: it did not wait.
	err := poolctest.WaitOrDump(t, second, secondOut, poolctest.WaitLimit)
	out := secondOut.String()
	if err == nil || !strings.Contains(out, "state etcd /two/ is locked: ID "+holder.ID) || !strings.Contains(out, "for apply since") || !strings.Contains(out, "poolc force-unlock ") {
		t.Fatalf("second apply: %v\n%s", err, out)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("second apply exit: %v", err)
	}
	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	out, err = poolctest.Run(t, bin, "apply", "--auto-approve", "--lock-timeout", "60s", dir)
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
