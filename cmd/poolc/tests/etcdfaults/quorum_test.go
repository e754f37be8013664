// Package etcdfaults tests the real poolc binary against a 3-member etcd
// cluster failing under it: it loses its leader, then its majority, in
// the middle of an apply.
package etcdfaults

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"poolc.dev/poolc/internal/testing/etcdtest"
	"poolc.dev/poolc/internal/testing/poolctest"
	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store/etcdstore"
)

// journalSince reads the records of the journal under prefix written
// after etcd revision since, by key: the raw value and the record.
func journalSince(t *testing.T, cli *clientv3.Client, prefix string, since int64) (map[string]string, map[string]journal.Record) {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix+"journal/", clientv3.WithPrefix(), clientv3.WithMinModRev(since+1))
	if err != nil {
		t.Fatal(err)
	}
	raw, recs := map[string]string{}, map[string]journal.Record{}
	for _, kv := range resp.Kvs {
		var r journal.Record
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
func waitFinished(t *testing.T, cli *clientv3.Client, prefix string, since int64, n int, kind pools.StepKind, out *bytes.Buffer) (map[string]string, map[string]journal.Record) {
	t.Helper()
	for deadline := time.Now().Add(poolctest.WaitLimit); ; time.Sleep(5 * time.Millisecond) {
		raw, recs := journalSince(t, cli, prefix, since)
		if slices.ContainsFunc(slices.Collect(maps.Values(recs)), func(r journal.Record) bool { return r.Event == journal.ApplyEnded }) {
			t.Fatalf("the apply ended before %d steps were seen finished; it is too fast for this test:\n%s", n, out)
		}
		if countFinished(recs) >= n && (kind == "" || slices.ContainsFunc(slices.Collect(maps.Values(recs)), func(r journal.Record) bool {
			return r.Event == journal.StepFinished && r.Effect != nil && r.Effect.Kind == kind
		})) {
			return raw, recs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the apply did not finish %d steps (a %q among them) in %v:\n%s", n, kind, poolctest.WaitLimit, out)
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
	bin := poolctest.Binary(t)
	c := etcdtest.Start(t, 3)
	cli := c.Client(t)
	// The first apply takes a few seconds, so that this process sees it
	// finish a step and stops the leader before it ends even when the
	// machine is loaded.
	dir := poolctest.EtcdSparkLab(t, t.TempDir(), 0.03, c.Endpoints(), "/quorum/", 5)
	cmd, out := poolctest.StartApply(t, bin, dir)
	waitFinished(t, cli, "/quorum/", 0, 1, "", out)
	leader := c.Leader()
	for deadline := time.Now().Add(poolctest.WaitLimit); leader < 0; leader = c.Leader() {
		if time.Now().After(deadline) {
			t.Fatalf("the cluster had no leader for %v", poolctest.WaitLimit)
		}
		time.Sleep(10 * time.Millisecond) // an election under way
	}
	c.Stop(leader)
	if err := poolctest.WaitOrDump(t, cmd, out, poolctest.WaitLimit); err != nil {
		t.Fatalf("the apply did not survive the loss of the leader: %v\n%s", err, out)
	}
	poolctest.CheckWorld(t, dir, "after losing the leader")
	c.Restart(leader)
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}

	// Change the pool so that there is work, then lose two members.
	moved := filepath.Join(dir, "spark-lab.hcl")
	src, _ := os.ReadFile(moved)
	cfg := strings.Replace(string(src), "active_profile = \"standalone\"", "active_profile = \"pair-taken\"", 1)
	cfg = strings.Replace(cfg, "time_scale = 0.03", "time_scale = 0.1", 1) // long enough to lose two members in
	os.WriteFile(moved, []byte(cfg), 0o644)
	before, err := cli.Get(context.Background(), "/quorum/state")
	if err != nil {
		t.Fatal(err)
	}
	cmd, out = poolctest.StartApply(t, bin, dir)
	seen, recs := waitFinished(t, cli, "/quorum/", before.Header.Revision, 2, pools.StepStart, out)
	down := []int{(leader + 1) % 3, (leader + 2) % 3}
	var stopping sync.WaitGroup
	for _, i := range down {
		stopping.Go(func() { c.Stop(i) })
	}
	stopping.Wait()
	lost := time.Now()
	err = poolctest.WaitOrDump(t, cmd, out, poolctest.WaitLimit)
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
		if r.Event != journal.StepFinished || r.Effect == nil {
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
	// The sim takes real time at a quicker pace again, so the rest of
	// the work does not take minutes.
	os.WriteFile(moved, []byte(strings.Replace(cfg, "time_scale = 0.1", "time_scale = 0.01", 1)), 0o644)
	again, err := poolctest.Run(t, bin, "apply", "--auto-approve", "--lock-timeout", "60s", dir)
	if err != nil {
		t.Fatalf("applying once the members are back: %v\n%s\nfailed run:\n%s", err, again, out)
	}
	if !strings.Contains(again, "The last apply ("+last.Apply+") was interrupted") {
		t.Errorf("the next apply did not see the journal:\n%s", again)
	}
	poolctest.CheckWorld(t, dir, "after quorum came back")
	if plan, err := poolctest.Run(t, bin, "plan", "--detailed-exitcode", dir); err != nil {
		t.Fatalf("the plan after converging is not empty: %v\n%s", err, plan)
	}
}

func countFinished(recs map[string]journal.Record) int {
	n := 0
	for _, r := range recs {
		if r.Event == journal.StepFinished {
			n++
		}
	}
	return n
}
