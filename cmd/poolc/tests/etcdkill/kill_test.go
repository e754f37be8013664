// Package etcdkill kills the real poolc binary with SIGKILL in the middle
// of applies that keep their state in etcd, while a second apply waits
// for the lock: the lock is free within the lease TTL plus a second, and
// the second apply resumes from the journal and converges.
package etcdkill

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"poolc.dev/poolc/internal/testing/etcdtest"
	"poolc.dev/poolc/internal/testing/poolctest"
	"poolc.dev/poolc/runner/store"
	"poolc.dev/poolc/runner/store/etcdstore"
)

// waitJournal waits until an apply wrote to its journal under prefix
// after etcd revision since.
func waitJournal(t *testing.T, cli *clientv3.Client, prefix string, since int64) {
	t.Helper()
	for deadline := time.Now().Add(poolctest.WaitLimit); ; time.Sleep(5 * time.Millisecond) {
		r, err := cli.Get(context.Background(), prefix+"journal/", clientv3.WithPrefix(), clientv3.WithMinModRev(since+1), clientv3.WithKeysOnly())
		if err == nil && len(r.Kvs) > 0 { // etcd counts before it filters by revision
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the apply never started its journal")
		}
	}
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
// lock is free within the lease TTL plus a second of the kill, the second
// apply takes it, sees the journal, resumes and converges, and the
// hardware never sees a lane started twice.
func TestEtcdAKilledApplyFreesItsLockWithinTheTTL(t *testing.T) {
	bin := poolctest.Binary(t)
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	// A 3 s lease: with 2 s, a running apply whose renewals (every third
	// of the TTL, looked for every 500 ms) stalled for 0.8 s lost its
	// lock at a load average of 36 on this machine's 2 cores.
	const ttl, kills, most = 3, 10, 20
	const bound = ttl*time.Second + time.Second
	r := rand.New(rand.NewPCG(2026, 12))
	interrupted := 0
	var took []time.Duration
	for trial := 0; len(took) < kills; trial++ {
		if trial == most {
			t.Fatalf("only %d of %d applies were killed mid-apply; the apply is too fast for this test", len(took), most)
		}
		prefix := fmt.Sprintf("/kill-%d/", trial)
		dir := poolctest.EtcdSparkLab(t, t.TempDir(), 0.004, c.Endpoints(), prefix, ttl)
		first, firstOut := poolctest.StartApply(t, bin, dir)
		waitJournal(t, cli, prefix, 0)
		held, _ := lockKeys(t, cli, prefix)
		if len(held) == 0 {
			t.Fatalf("trial %d: the apply wrote its journal without the lock", trial)
		}
		holder := held[0]
		// The first apply read the pool before it took the lock: the
		// waiting one does what the first leaves in virtual time.
		poolctest.EtcdSparkLab(t, dir, 0, c.Endpoints(), prefix, ttl)
		second, secondOut := poolctest.StartApply(t, bin, dir, "--lock-timeout", "60s")
		// Wait until the second apply queues for the lock (its key behind
		// the holder's), or the first one finished and let go of it.
		var rev int64
		queued := false
		for deadline := time.Now().Add(poolctest.WaitLimit); ; time.Sleep(5 * time.Millisecond) {
			var keys []*mvccpb.KeyValue
			keys, rev = lockKeys(t, cli, prefix)
			if len(keys) == 0 || string(keys[0].Key) != string(holder.Key) {
				break
			}
			if len(keys) > 1 {
				queued = true
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("trial %d: the second apply never queued for the lock:\n%s", trial, secondOut)
			}
		}
		if !queued {
			// The first apply was done before the second queued: nothing
			// to kill, and the second finds nothing to do.
			if err := poolctest.WaitOrDump(t, first, firstOut, poolctest.WaitLimit); err != nil {
				t.Fatalf("trial %d: the first apply: %v\n%s", trial, err, firstOut)
			}
			if err := poolctest.WaitOrDump(t, second, secondOut, poolctest.WaitLimit); err != nil {
				t.Fatalf("trial %d: the second apply: %v\n%s", trial, err, secondOut)
			}
			continue
		}
		time.Sleep(time.Duration(r.IntN(300)) * time.Millisecond) // a random point of the apply
		ctx, cancel := context.WithCancel(context.Background())
		freed := cli.Watch(ctx, string(holder.Key), clientv3.WithRev(rev+1), clientv3.WithFilterPut())
		taken := cli.Watch(ctx, prefix+"lockinfo", clientv3.WithRev(rev+1), clientv3.WithFilterDelete())
		end := poolctest.WatchLeaseEnd(cli, clientv3.LeaseID(holder.Lease))
		killed := poolctest.Kill(t, first)
		if ws := first.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() {
			// It finished first: the second apply finds nothing to do.
			cancel()
			if !first.ProcessState.Success() {
				t.Fatalf("trial %d: %v\n%s", trial, first.ProcessState, firstOut)
			}
			if err := poolctest.WaitOrDump(t, second, secondOut, poolctest.WaitLimit); err != nil {
				t.Fatalf("trial %d: the waiting apply: %v\n%s", trial, err, secondOut)
			}
			continue
		}
		// The verdict on the bound: the holder's key, once deleted, is
		// never written again (its name is its lease's), so finding it
		// still there in a read sent at or after kill+bound proves the
		// lock was not free within the bound, however late this process
		// gets to send the read; the time the deletion is seen on the
		// watch below only bounds it from above, later still when the
		// machine is loaded.
		verdict := make(chan string, 1)
		go func() {
			time.Sleep(time.Until(killed.Add(bound)))
			sent := time.Now()
			resp, err := cli.Get(context.Background(), string(holder.Key), clientv3.WithKeysOnly())
			switch {
			case err != nil:
				verdict <- fmt.Sprintf("reading the holder's key at the bound: %v", err)
			case len(resp.Kvs) > 0:
				verdict <- fmt.Sprintf("the killed apply's lock key was still there in a read sent %v after the kill", sent.Sub(killed).Round(time.Millisecond))
			default:
				verdict <- ""
			}
		}()
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
			case <-time.After(poolctest.WaitLimit):
				t.Fatalf("trial %d: the lock of the killed apply was not taken over %v after the kill (lease %ds):\n%s", trial, time.Since(killed), ttl, secondOut)
			}
		}
		cancel()
		d := freedAt.Sub(killed)
		took = append(took, d)
		// Where the time went: the lease's life left at the kill (at most
		// the TTL: the holder renews it every TTL/3), etcd's revocation
		// after it lapsed (its lessor looks every 500 ms) and the waiting
		// apply's turn.
		where := "the lease's end unknown"
		if e := <-end; e.Err == nil {
			where = fmt.Sprintf("lease life left at the kill %v..%v, freed %v..%v after it lapsed, taken %v after it was freed",
				e.Earliest.Sub(killed).Round(time.Millisecond), e.Latest.Sub(killed).Round(time.Millisecond),
				freedAt.Sub(e.Latest).Round(time.Millisecond), freedAt.Sub(e.Earliest).Round(time.Millisecond),
				takenAt.Sub(freedAt).Round(time.Millisecond))
		} else {
			where += ": " + e.Err.Error()
		}
		t.Logf("trial %d: the lock was seen free %v after the kill (%s)", trial, d.Round(time.Millisecond), where)
		if v := <-verdict; v != "" {
			t.Errorf("trial %d: %s; want the lock free within the lease TTL plus a second, %v (%s)", trial, v, bound, where)
		}
		if err := poolctest.WaitOrDump(t, second, secondOut, poolctest.WaitLimit); err != nil {
			t.Fatalf("trial %d: the waiting apply: %v\n%s\nkilled run:\n%s", trial, err, secondOut, firstOut)
		}
		if last != nil {
			interrupted++
			if !strings.Contains(secondOut.String(), "The last apply ("+last.Apply+") was interrupted") {
				t.Errorf("trial %d: the next apply did not see the journal:\n%s", trial, secondOut)
			}
		}
		poolctest.CheckWorld(t, dir, fmt.Sprintf("trial %d, after applying again", trial))
		if plan, err := poolctest.Run(t, bin, "plan", "--detailed-exitcode", dir); err != nil {
			t.Fatalf("trial %d: the plan after converging is not empty: %v\n%s", trial, err, plan)
		}
	}
	slices.Sort(took)
	t.Logf("%d applies killed mid-apply (%d with steps in flight); kill to lock seen free: min %v, median %v, max %v (lease %ds, bound %v)", len(took), interrupted,
		took[0].Round(time.Millisecond), took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), ttl, bound)
}
