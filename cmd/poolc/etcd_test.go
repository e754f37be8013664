package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"poolc.dev/poolc/internal/etcdtest"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store"
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

// leaseEnd is when a lease lapses, as bounds: etcd says a lease's
// remaining life in whole seconds, rounded down, so the moment the figure
// drops below one second, one second before the lease lapses, is known to
// within two polls.
type leaseEnd struct {
	earliest, latest time.Time
	err              error
}

// watchLeaseEnd polls the remaining life of lease id until it drops below
// one second and sends the bounds of its end. It fails when the first
// poll already reads less than a second: then nothing bounds the end from
// below.
func watchLeaseEnd(cli *clientv3.Client, id clientv3.LeaseID) <-chan leaseEnd {
	out := make(chan leaseEnd, 1)
	go func() {
		var lastAbove time.Time // when the last poll reading >= 1s was sent
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			sent := time.Now()
			ttl, err := cli.TimeToLive(context.Background(), id)
			got := time.Now()
			if err == nil && ttl.TTL >= 1 {
				lastAbove = sent
				continue
			}
			if lastAbove.IsZero() {
				out <- leaseEnd{err: fmt.Errorf("lease %x had less than a second left at the first look (%v, %v)", int64(id), ttl, err)}
				return
			}
			out <- leaseEnd{earliest: lastAbove.Add(time.Second), latest: got.Add(time.Second)}
			return
		}
		out <- leaseEnd{err: fmt.Errorf("lease %x still had a second left after a minute", int64(id))}
	}()
	return out
}

// lockKeys returns the keys waiting for or holding the lock under prefix,
// oldest (the holder) first, and the revision they were read at.
func lockKeys(t *testing.T, cli *clientv3.Client, prefix string) ([]*mvccpb.KeyValue, int64) {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix+"lock/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Kvs, resp.Header.Revision
}

// SIGKILL an apply at a random point after it took the lock, while a
// second apply started with --lock-timeout waits for it, ten times: the
// second apply holds the lock within the lease TTL plus a second of the
// kill, sees the journal, resumes and converges, and the hardware never
// sees a lane started twice.
func TestEtcdAKilledApplyFreesItsLockWithinTheTTL(t *testing.T) {
	bin := poolcBinary(t)
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	const ttl, kills, most = 2, 10, 20
	const bound = ttl*time.Second + time.Second
	r := rand.New(rand.NewPCG(2026, 12))
	interrupted := 0
	var took []time.Duration
	for trial := 0; len(took) < kills; trial++ {
		if trial == most {
			t.Fatalf("only %d of %d applies were killed mid-apply; the apply is too fast for this test", len(took), most)
		}
		prefix := fmt.Sprintf("/kill-%d/", trial)
		dir := etcdSparkLab(t, t.TempDir(), 0.005, c.Endpoints(), prefix, ttl)
		first, firstOut := startApply(t, bin, dir)
		waitJournal(t, cli, prefix, 0)
		held, _ := lockKeys(t, cli, prefix)
		if len(held) == 0 {
			t.Fatalf("trial %d: the apply wrote its journal without the lock", trial)
		}
		holder := held[0]
		second, secondOut := startApply(t, bin, dir, "--lock-timeout", "60s")
		// Wait until the second apply queues for the lock (its key beside
		// the holder's), or the first one finished.
		var rev int64
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			var keys []*mvccpb.KeyValue
			keys, rev = lockKeys(t, cli, prefix)
			if len(keys) == 0 || string(keys[0].Key) != string(holder.Key) || len(keys) > 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("trial %d: the second apply never queued for the lock:\n%s", trial, secondOut)
			}
		}
		time.Sleep(time.Duration(r.IntN(300)) * time.Millisecond)
		ctx, cancel := context.WithCancel(context.Background())
		freed := cli.Watch(ctx, string(holder.Key), clientv3.WithRev(rev+1), clientv3.WithFilterPut())
		taken := cli.Watch(ctx, prefix+"lockinfo", clientv3.WithRev(rev+1), clientv3.WithFilterDelete())
		end := watchLeaseEnd(cli, clientv3.LeaseID(holder.Lease))
		killed := time.Now()
		first.Process.Signal(syscall.SIGKILL)
		first.Wait()
		if ws := first.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() {
			// It finished first: the second apply finds nothing to do.
			cancel()
			if !first.ProcessState.Success() {
				t.Fatalf("trial %d: %v\n%s", trial, first.ProcessState, firstOut)
			}
			if err := waitOrDump(t, second, secondOut, time.Minute); err != nil {
				t.Fatalf("trial %d: the waiting apply: %v\n%s", trial, err, secondOut)
			}
			continue
		}
		last, err := etcdstore.New(cli, prefix, ttl).LastApply()
		if err != nil {
			t.Fatal(err)
		}
		var freedAt, takenAt time.Time
		for freedAt.IsZero() || takenAt.IsZero() {
			select {
			case <-freed:
				freedAt = time.Now()
			case w := <-taken:
				var info store.LockInfo
				if len(w.Events) == 0 || json.Unmarshal(w.Events[0].Kv.Value, &info) != nil || info.PID != second.Process.Pid {
					t.Fatalf("trial %d: the lock went to someone else than the waiting apply (pid %d): %v", trial, second.Process.Pid, w.Events)
				}
				takenAt = time.Now()
			case <-time.After(30 * time.Second):
				t.Fatalf("trial %d: the lock of the killed apply was not taken over %v after the kill (lease %ds):\n%s", trial, time.Since(killed), ttl, secondOut)
			}
		}
		cancel()
		d := takenAt.Sub(killed)
		took = append(took, d)
		// Where the time went: the lease's life left at the kill (at most
		// the TTL: the holder renews it every TTL/3), etcd's revocation
		// after it lapsed (its lessor looks every 500 ms) and the waiting
		// apply's turn.
		where := "the lease's end unknown"
		if e := <-end; e.err == nil {
			where = fmt.Sprintf("lease life left at the kill %v..%v, freed %v..%v after it lapsed, taken %v after it was freed",
				e.earliest.Sub(killed).Round(time.Millisecond), e.latest.Sub(killed).Round(time.Millisecond),
				freedAt.Sub(e.latest).Round(time.Millisecond), freedAt.Sub(e.earliest).Round(time.Millisecond),
				takenAt.Sub(freedAt).Round(time.Millisecond))
		} else {
			where += ": " + e.err.Error()
		}
		t.Logf("trial %d: the waiting apply held the lock %v after the kill (%s)", trial, d.Round(time.Millisecond), where)
		if d > bound {
			t.Errorf("trial %d: the waiting apply held the lock %v after the kill; want at most the lease TTL plus a second, %v (%s)", trial, d.Round(time.Millisecond), bound, where)
		}
		if err := waitOrDump(t, second, secondOut, time.Minute); err != nil {
			t.Fatalf("trial %d: the waiting apply: %v\n%s\nkilled run:\n%s", trial, err, secondOut, firstOut)
		}
		if last != nil {
			interrupted++
			if !strings.Contains(secondOut.String(), "The last apply ("+last.Apply+") was interrupted") {
				t.Errorf("trial %d: the next apply did not see the journal:\n%s", trial, secondOut)
			}
		}
		checkWorld(t, dir, fmt.Sprintf("trial %d, after applying again", trial))
		if plan, err := run(t, bin, "plan", "--detailed-exitcode", dir); err != nil {
			t.Fatalf("trial %d: the plan after converging is not empty: %v\n%s", trial, err, plan)
		}
	}
	slices.Sort(took)
	t.Logf("%d applies killed mid-apply (%d with steps in flight); kill to lock taken: min %v, median %v, max %v (lease %ds, bound %v)", len(took), interrupted,
		took[0].Round(time.Millisecond), took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), ttl, bound)
}

// journalSince reads the records of the journal under prefix written
// after etcd revision since, by key: the raw value and the record.
func journalSince(t *testing.T, cli *clientv3.Client, prefix string, since int64) (map[string]string, map[string]store.Record) {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix+"journal/", clientv3.WithPrefix(), clientv3.WithMinModRev(since+1))
	if err != nil {
		t.Fatal(err)
	}
	raw, recs := map[string]string{}, map[string]store.Record{}
	for _, kv := range resp.Kvs {
		var r store.Record
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			t.Fatalf("%s: %v", kv.Key, err)
		}
		raw[string(kv.Key)], recs[string(kv.Key)] = string(kv.Value), r
	}
	return raw, recs
}

// waitFinished waits until the journal under prefix holds n records of
// finished steps written after revision since, one of them of a step of
// kind (any kind: ""), while the apply has not ended, and returns what
// the journal holds then.
func waitFinished(t *testing.T, cli *clientv3.Client, prefix string, since int64, n int, kind pools.StepKind, out *bytes.Buffer) (map[string]string, map[string]store.Record) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		raw, recs := journalSince(t, cli, prefix, since)
		if slices.ContainsFunc(slices.Collect(maps.Values(recs)), func(r store.Record) bool { return r.Event == store.ApplyEnded }) {
			t.Fatalf("the apply ended before %d steps were seen finished; it is too fast for this test:\n%s", n, out)
		}
		if countFinished(recs) >= n && (kind == "" || slices.ContainsFunc(slices.Collect(maps.Values(recs)), func(r store.Record) bool {
			return r.Event == store.StepFinished && r.Effect != nil && r.Effect.Kind == kind
		})) {
			return raw, recs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the apply did not finish %d steps (a %q among them) in a minute:\n%s", n, kind, out)
		}
	}
}

// A 3-member cluster loses its leader once the apply finished a step: the
// apply finishes, as quorum holds. It then loses two members once the
// next apply finished steps: the apply fails with a message saying etcd
// has no majority; once they are back, every record the journal held
// before is still there, the state the next apply reads holds the lanes
// those steps started and stopped, and the next apply resumes from the
// journal and converges.
func TestEtcdQuorumLossMidApply(t *testing.T) {
	bin := poolcBinary(t)
	c := etcdtest.Start(t, 3)
	cli := c.Client(t)
	dir := etcdSparkLab(t, t.TempDir(), 0.01, c.Endpoints(), "/quorum/", 5)
	cmd, out := startApply(t, bin, dir)
	waitFinished(t, cli, "/quorum/", 0, 1, "", out)
	leader := c.Leader()
	if leader < 0 {
		t.Fatal("no leader")
	}
	c.Stop(leader)
	if err := waitOrDump(t, cmd, out, time.Minute); err != nil {
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
	seen, recs := waitFinished(t, cli, "/quorum/", before.Header.Revision, 2, pools.StepStart, out)
	down := []int{(leader + 1) % 3, (leader + 2) % 3}
	var stopping sync.WaitGroup
	for _, i := range down {
		stopping.Go(func() { c.Stop(i) })
	}
	stopping.Wait()
	lost := time.Now()
	err = waitOrDump(t, cmd, out, time.Minute)
	if err == nil {
		t.Fatalf("the apply succeeded without a majority:\n%s", out)
	}
	t.Logf("the apply failed %v after two members stopped", time.Since(lost).Round(100*time.Millisecond))
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

	// Nothing is lost: the records seen before are all there, and the
	// state holds the weights the finished steps fetched and the lanes
	// they left.
	after, _ := journalSince(t, cli, "/quorum/", before.Header.Revision)
	for key, value := range seen {
		if after[key] != value {
			t.Errorf("journal record %s was %s before the loss of quorum, %q after", key, value, after[key])
		}
	}
	st, err := etcdstore.New(cli, "/quorum/", 5).Read()
	if err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(recs))
	lanes := map[string]bool{} // lane@node: running after the finished steps
	fetched := 0
	for _, key := range keys {
		r := recs[key]
		if r.Event != store.StepFinished || r.Effect == nil {
			continue
		}
		if p := r.Effect.Prefetch; p != nil {
			if !st.Fleet.HasPrefetched(*p) {
				t.Errorf("step %s finished, but the state read after quorum came back lacks its weights %+v", r.Step, *p)
			}
			fetched++
		}
		if r.Effect.Lane == nil {
			continue
		}
		switch at := r.Effect.Lane.Name + "@" + r.Effect.Lane.Node; r.Effect.Kind {
		case pools.StepStart:
			lanes[at] = true
		case pools.StepStop:
			lanes[at] = false
		}
	}
	for at, running := range lanes {
		name, node, _ := strings.Cut(at, "@")
		if (st.Fleet.Lane(name, node) != nil) != running {
			t.Errorf("a finished step left lane %s running=%v, but the state read after quorum came back says otherwise", at, running)
		}
	}
	last, err := etcdstore.New(cli, "/quorum/", 5).LastApply()
	if err != nil || last == nil {
		t.Fatalf("the journal does not show the failed apply as interrupted: %v %v", last, err)
	}
	t.Logf("%d journal records (%d finished steps: %d prefetches, %d lanes started or stopped) seen before two members stopped, all there after", len(seen), countFinished(recs), fetched, len(lanes))
	again, err := run(t, bin, "apply", "--auto-approve", "--lock-timeout", "60s", dir)
	if err != nil {
		t.Fatalf("applying once the members are back: %v\n%s\nfailed run:\n%s", err, again, out)
	}
	if !strings.Contains(again, "The last apply ("+last.Apply+") was interrupted") {
		t.Errorf("the next apply did not see the journal:\n%s", again)
	}
	checkWorld(t, dir, "after quorum came back")
	if plan, err := run(t, bin, "plan", "--detailed-exitcode", dir); err != nil {
		t.Fatalf("the plan after converging is not empty: %v\n%s", err, plan)
	}
}

func countFinished(recs map[string]store.Record) int {
	n := 0
	for _, r := range recs {
		if r.Event == store.StepFinished {
			n++
		}
	}
	return n
}
