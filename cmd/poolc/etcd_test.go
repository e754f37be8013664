package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"poolc.dev/poolc/internal/etcdtest"
	"poolc.dev/poolc/runner/store/etcdstore"
)

// etcdSparkLab writes the example pool into dir with the sim taking real
// time and its state in etcd under prefix, with locks on leases of ttl
// seconds.
func etcdSparkLab(t *testing.T, dir string, timeScale float64, endpoints []string, prefix string, ttl int) string {
	t.Helper()
	slowSparkLab(t, dir, timeScale)
	path := filepath.Join(dir, "spark-lab.hcl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	quoted := make([]string, len(endpoints))
	for i, e := range endpoints {
		quoted[i] = fmt.Sprintf("%q", e)
	}
	block := fmt.Sprintf("  state {\n    backend   = \"etcd\"\n    endpoints = [%s]\n    prefix    = %q\n    lease_ttl = %d\n  }", strings.Join(quoted, ", "), prefix, ttl)
	cfg := strings.Replace(string(src), "  state {\n    backend = \"file\"\n    path    = \"poolc.state.json\"\n  }", block, 1)
	if cfg == string(src) {
		t.Fatal("the example's state block changed; update this test")
	}
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitLocked waits until the state lock under prefix is held.
func waitLocked(t *testing.T, cli *clientv3.Client, prefix string, out *bytes.Buffer) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if r, err := cli.Get(context.Background(), prefix+"lockinfo"); err == nil && len(r.Kvs) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the apply never took the lock:\n%s", out)
		}
	}
}

// waitJournal waits until an apply wrote to its journal under prefix
// after etcd revision since.
func waitJournal(t *testing.T, cli *clientv3.Client, prefix string, since int64) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		r, err := cli.Get(context.Background(), prefix+"journal/", clientv3.WithPrefix(), clientv3.WithMinModRev(since+1), clientv3.WithKeysOnly())
		if err == nil && len(r.Kvs) > 0 { // etcd counts before it filters by revision
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the apply never started its journal")
		}
	}
}

// waitOrDump waits for cmd; past limit, it has the Go runtime print the
// process's goroutines (SIGQUIT) and fails the test with its output.
func waitOrDump(t *testing.T, cmd *exec.Cmd, out *bytes.Buffer, limit time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		cmd.Process.Signal(syscall.SIGQUIT)
		<-done
		t.Fatalf("%v did not end within %v:\n%s", cmd.Args, limit, out)
		return nil
	}
}

func startApply(t *testing.T, bin, dir string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, append(append([]string{"apply", "--auto-approve"}, args...), dir)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

// Two applies from two processes against one etcd: the second fails at
// once with the first one's lock info, or waits with --lock-timeout.
func TestEtcdTwoAppliesNeverRunAtOnce(t *testing.T) {
	bin := poolcBinary(t)
	c := etcdtest.Start(t, 1)
	dir := etcdSparkLab(t, t.TempDir(), 0.01, c.Endpoints(), "/two/", 5)
	first, firstOut := startApply(t, bin, dir)
	waitLocked(t, c.Client(t), "/two/", firstOut)
	begin := time.Now()
	out, err := run(t, bin, "apply", "--auto-approve", dir)
	if err == nil || !strings.Contains(out, "state etcd /two/ is locked: ID ") || !strings.Contains(out, "for apply since") || !strings.Contains(out, "poolc force-unlock ") {
		t.Fatalf("second apply: %v\n%s", err, out)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("second apply exit: %v", err)
	}
	if took := time.Since(begin); took > 3*time.Second {
		t.Errorf("the second apply took %v to fail; it should fail fast", took)
	}
	out, err = run(t, bin, "apply", "--auto-approve", "--lock-timeout", "60s", dir)
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

// SIGKILL an apply at a random point after it took the lock, ten times:
// the lock is free within the lease TTL plus a second, the next apply
// sees the journal, resumes and converges, and the hardware never sees a
// lane started twice.
func TestEtcdAKilledApplyFreesItsLockWithinTheTTL(t *testing.T) {
	bin := poolcBinary(t)
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	const ttl, trials = 2, 10
	r := rand.New(rand.NewPCG(2026, 12))
	interrupted, slowest := 0, time.Duration(0)
	for trial := range trials {
		prefix := fmt.Sprintf("/kill-%d/", trial)
		dir := etcdSparkLab(t, t.TempDir(), 0.004, c.Endpoints(), prefix, ttl)
		cmd, out := startApply(t, bin, dir)
		waitJournal(t, cli, prefix, 0)
		time.Sleep(time.Duration(r.IntN(400)) * time.Millisecond)
		locks, err := cli.Get(context.Background(), prefix+"lock/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		if len(locks.Kvs) == 0 { // it finished first
			if err := cmd.Wait(); err != nil {
				t.Fatalf("trial %d: %v\n%s", trial, err, out)
			}
			continue
		}
		freed := cli.Watch(context.Background(), prefix+"lock/", clientv3.WithPrefix(), clientv3.WithRev(locks.Header.Revision+1), clientv3.WithFilterPut())
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		killed := time.Now()
		// etcd frees the lock when the lease's remaining life, at most
		// its TTL, has passed without a heartbeat. The wall time it took
		// is logged, not asserted: on a loaded machine it measures the
		// scheduler as much as etcd.
		left, err := cli.TimeToLive(context.Background(), clientv3.LeaseID(locks.Kvs[0].Lease))
		if err != nil {
			t.Fatal(err)
		}
		if left.GrantedTTL != ttl || left.TTL > ttl {
			t.Fatalf("trial %d: the lock's lease has %ds of %ds left; want at most %ds", trial, left.TTL, left.GrantedTTL, ttl)
		}
		select {
		case <-freed:
		case <-time.After(30 * time.Second):
			t.Fatalf("trial %d: the lock of the killed apply is still held %v after the kill (lease %ds)", trial, time.Since(killed), ttl)
		}
		slowest = max(slowest, time.Since(killed))
		last, err := etcdstore.New(cli, prefix, ttl).LastApply()
		if err != nil {
			t.Fatal(err)
		}
		if last != nil {
			interrupted++
		}
		again, err := run(t, bin, "apply", "--auto-approve", dir)
		if err != nil {
			t.Fatalf("trial %d: applying again: %v\n%s\nkilled run:\n%s", trial, err, again, out)
		}
		if last != nil && !strings.Contains(again, "The last apply ("+last.Apply+") was interrupted") {
			t.Errorf("trial %d: the next apply did not see the journal:\n%s", trial, again)
		}
		checkWorld(t, dir, fmt.Sprintf("trial %d, after applying again", trial))
		if plan, err := run(t, bin, "plan", "--detailed-exitcode", dir); err != nil {
			t.Fatalf("trial %d: the plan after converging is not empty: %v\n%s", trial, err, plan)
		}
	}
	t.Logf("%d of %d trials killed mid-apply; the lock was free at most %v after the kill (lease %ds)", interrupted, trials, slowest.Round(time.Millisecond), ttl)
	if interrupted < trials/2 {
		t.Errorf("only %d of %d trials were killed mid-apply; the apply is too fast for this test", interrupted, trials)
	}
}

// A 3-member cluster loses its leader mid-apply: the apply finishes, as
// quorum holds. It then loses two members mid-apply: the apply fails
// with a message saying etcd has no majority, and once they are back the
// next apply converges with nothing lost.
func TestEtcdQuorumLossMidApply(t *testing.T) {
	bin := poolcBinary(t)
	c := etcdtest.Start(t, 3)
	cli := c.Client(t)
	dir := etcdSparkLab(t, t.TempDir(), 0.01, c.Endpoints(), "/quorum/", 5)
	cmd, out := startApply(t, bin, dir)
	waitLocked(t, cli, "/quorum/", out)
	time.Sleep(300 * time.Millisecond)
	leader := c.Leader()
	if leader < 0 {
		t.Fatal("no leader")
	}
	c.Stop(leader)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the apply did not survive the loss of the leader: %v\n%s", err, out)
	}
	checkWorld(t, dir, "after losing the leader")
	c.Restart(leader)
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}

	// Change the pool so that there is work, then lose two members.
	moved := filepath.Join(dir, "spark-lab.hcl")
	src, _ := os.ReadFile(moved)
	cfg := strings.Replace(string(src), "active_profile = \"standalone\"", "active_profile = \"pair-taken\"", 1)
	cfg = strings.Replace(cfg, "time_scale = 0.01", "time_scale = 0.1", 1) // long enough to lose two members in
	os.WriteFile(moved, []byte(cfg), 0o644)
	before, err := cli.Get(context.Background(), "/quorum/state")
	if err != nil {
		t.Fatal(err)
	}
	cmd, out = startApply(t, bin, dir)
	waitJournal(t, cli, "/quorum/", before.Header.Revision)
	down := []int{(leader + 1) % 3, (leader + 2) % 3}
	var stopping sync.WaitGroup
	for _, i := range down {
		stopping.Go(func() { c.Stop(i) })
	}
	stopping.Wait()
	err = waitOrDump(t, cmd, out, time.Minute)
	if err == nil {
		t.Fatalf("the apply succeeded without a majority:\n%s", out)
	}
	if !strings.Contains(out.String(), "is a majority of its members up?") {
		t.Errorf("the failure does not say etcd lost its majority:\n%s", out)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "poolc apply:") || strings.HasPrefix(line, "Apply failed") {
			t.Logf("without a majority: %s", line)
		}
	}
	for _, i := range down {
		c.Restart(i)
	}
	for range down {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	again, err := run(t, bin, "apply", "--auto-approve", "--lock-timeout", "60s", dir)
	if err != nil {
		t.Fatalf("applying once the members are back: %v\n%s\nfailed run:\n%s", err, again, out)
	}
	checkWorld(t, dir, "after quorum came back")
	if plan, err := run(t, bin, "plan", "--detailed-exitcode", dir); err != nil {
		t.Fatalf("the plan after converging is not empty: %v\n%s", err, plan)
	}
}
