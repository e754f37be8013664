package etcdstore

import (
	"context"
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"poolc.dev/poolc/internal/testing/etcdtest"
	"poolc.dev/poolc/internal/testing/storetest"
	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store"
)

// heldTTL is the lease, in seconds, of locks the tests hold while they
// work: long enough that no stall of a loaded machine lets one lapse
// mid-test. Only the test of a lapsing lock uses a short one.
const heldTTL = 30

func newClient(t *testing.T, c *etcdtest.Cluster) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func TestWriteGivesALineageAndCountsSerials(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := New(c.Client(t), "/poolc/lab", heldTTL)
	st, err := s.Read()
	if err != nil || st.Serial != 0 || st.Lineage != "" {
		t.Fatalf("empty state = %+v, %v", st, err)
	}
	st.Pool = "lab"
	st.Lanes = []pools.LaneState{{Name: "chat", Node: "a", Model: "m", Port: 1, Residency: pools.KeepWarm, MemoryGB: 3, Loaded: true}}
	if err := s.Write(st); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(st); err != nil {
		t.Fatal(err)
	}
	got, err := New(c.Client(t), "/poolc/lab/", heldTTL).Read()
	if err != nil {
		t.Fatal(err)
	}
	if got.Serial != 2 || got.Lineage != st.Lineage || len(got.Lineage) != 36 || !reflect.DeepEqual(got.Lanes, st.Lanes) {
		t.Fatalf("read back %+v", got)
	}
}

func TestAStaleWriteIsRefused(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a, b := New(newClient(t, c), "/p", heldTTL), New(newClient(t, c), "/p", heldTTL)
	sa, _ := a.Read()
	sb, _ := b.Read()
	sa.Pool, sb.Pool = "from-a", "from-b"
	if err := a.Write(sa); err != nil {
		t.Fatal(err)
	}
	err := b.Write(sb)
	var stale *StaleError
	if !errors.As(err, &stale) || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Fatalf("stale write: %v", err)
	}
	if sb.Serial != 0 || sb.Lineage != "" {
		t.Errorf("a refused write changed the state: %+v", sb)
	}
	got, _ := New(c.Client(t), "/p", heldTTL).Read()
	if got.Pool != "from-a" {
		t.Fatalf("the stale write overwrote the state: %+v", got)
	}
	// Read again, b's write goes through on top of a's.
	sb, _ = b.Read()
	sb.Pool = "from-b"
	if err := b.Write(sb); err != nil || sb.Serial != 2 || sb.Lineage != sa.Lineage {
		t.Fatalf("write after a fresh read: %v, %+v", err, sb)
	}
}

func TestASecondLockFailsWithTheHoldersInfoAndWaitsWithATimeout(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a, b := New(newClient(t, c), "/p", heldTTL), New(newClient(t, c), "/p", heldTTL)
	first, err := a.Acquire(context.Background(), store.NewLockInfo("apply", "test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	infoA, _ := a.LockInfo()
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	_, err = b.Acquire(ctx, store.NewLockInfo("apply", "test"), nil)
	cancel()
	var locked *store.LockedError
	if !errors.As(err, &locked) || locked.Info.ID != infoA.ID || !strings.Contains(err.Error(), "poolc force-unlock "+infoA.ID) {
		t.Fatalf("second lock: %v", err)
	}
	// With a timeout, the second waits and gets the lock once released.
	go func() {
		time.Sleep(200 * time.Millisecond)
		first.Unlock()
	}()
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	second, err := b.Acquire(ctx, store.NewLockInfo("apply", "test"), nil)
	if err != nil {
		t.Fatalf("waiting for the lock: %v", err)
	}
	defer second.Unlock()
	if got, _ := a.LockInfo(); got.ID == infoA.ID {
		t.Errorf("lock info not replaced: %+v", got)
	}
}

func TestALockOfAVanishedHolderLapsesWithItsLease(t *testing.T) {
	c := etcdtest.Start(t, 1)
	gone, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(gone, "/p", 2).Acquire(context.Background(), store.NewLockInfo("apply", "test"), nil); err != nil {
		t.Fatal(err)
	}
	gone.Close() // no more heartbeats, no unlock
	// The holder's last heartbeat came before Close: from here its lease
	// lapses within its TTL, once etcd's lessor next checks (every 0.5s)
	// and a revoke is committed; the next holder then still grants a lease
	// and takes the mutex. On a loaded 2-core machine each of those waits
	// for the scheduler and the disk, so the bound below is the TTL with
	// 8s of margin: still short of the 15s default TTL, so a lock that
	// lapsed with anything but its own lease fails it. The wait itself has
	// a generous deadline of its own.
	lost := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	next := New(c.Client(t), "/p", heldTTL)
	l, err := next.Acquire(ctx, store.NewLockInfo("apply", "test"), nil)
	if err != nil {
		t.Fatalf("lock of a vanished holder not released: %v", err)
	}
	l.Unlock()
	if waited, bound := time.Since(lost), 2*time.Second+8*time.Second; waited > bound {
		t.Errorf("took %v to free a lock with a 2s lease, more than %v", waited, bound)
	}
	if _, err := next.LockInfo(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lock info after unlock: %v", err)
	}
}

func TestForceUnlockRevokesTheHoldersLeaseAndItsWritesFail(t *testing.T) {
	c := etcdtest.Start(t, 1)
	holder := New(newClient(t, c), "/p", heldTTL)
	if _, err := holder.Read(); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Acquire(context.Background(), store.NewLockInfo("apply", "test"), nil); err != nil {
		t.Fatal(err)
	}
	other := New(c.Client(t), "/p", heldTTL)
	if err := other.ForceUnlock("wrong"); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("force-unlock with a wrong ID: %v", err)
	}
	info, err := other.LockInfo()
	if err != nil {
		t.Fatal(err)
	}
	if err := other.ForceUnlock(info.ID); err != nil {
		t.Fatal(err)
	}
	if err := other.ForceUnlock(info.ID); err == nil || !strings.Contains(err.Error(), "not locked") {
		t.Fatalf("force-unlock without a lock: %v", err)
	}
	st := &pools.State{FormatVersion: pools.StateFormatVersion, Pool: "late"}
	if err := holder.Write(st); !errors.Is(err, ErrLockLost) {
		t.Fatalf("a write after losing the lock: %v", err)
	}
	if _, err := holder.BeginJournal("x"); !errors.Is(err, ErrLockLost) {
		t.Fatalf("a journal after losing the lock: %v", err)
	}
}

func TestTheJournalTellsAnInterruptedApply(t *testing.T) {
	c := etcdtest.Start(t, 1)
	storetest.JournalTellsAnInterruptedApply(t, func() store.Backend { return New(c.Client(t), "/p", heldTTL) }, nil)
}

// A holder killed between snapshots loses nothing: Read replays what its
// journal recorded after the last snapshot, and the next lock writes it
// into the state key, so the next journal can replace the old one.
func TestReadReplaysTheStepsFinishedAfterTheLastSnapshotAndTheLockSettlesThem(t *testing.T) {
	c := etcdtest.Start(t, 1)
	route := func(alias string) *pools.Step {
		return &pools.Step{ID: "route:" + alias, Kind: pools.StepRoute, Route: &pools.Route{Alias: alias, Lane: pools.Cloud}}
	}
	killed := New(newClient(t, c), "/p", heldTTL)
	if _, err := killed.Acquire(context.Background(), store.NewLockInfo("apply", "test"), nil); err != nil {
		t.Fatal(err)
	}
	st, _ := killed.Read()
	j, err := killed.BeginJournal("a1")
	if err != nil {
		t.Fatal(err)
	}
	st.Pool = "lab"
	for _, a := range []string{"a", "b"} {
		j.Append(journal.Record{Event: journal.StepFinished, Step: "route:" + a, Effect: route(a)})
		st.Fleet.Apply(*route(a))
	}
	if err := j.Snapshot(st, 2); err != nil {
		t.Fatal(err)
	}
	j.Append(journal.Record{Event: journal.StepFinished, Step: "route:c", Effect: route("c")})
	// Killed here, before the next snapshot; its lease is revoked.
	info, _ := killed.LockInfo()
	next := New(c.Client(t), "/p", heldTTL)
	if err := next.ForceUnlock(info.ID); err != nil {
		t.Fatal(err)
	}
	got, err := next.Read()
	if err != nil || len(got.Routes) != 3 || got.Serial != 1 {
		t.Fatalf("read after the kill: %+v %v", got, err)
	}
	if _, err := next.BeginJournal("not-settled"); err == nil || !strings.Contains(err.Error(), "take the state lock first") {
		t.Fatalf("a journal replacing unsettled steps: %v", err)
	}
	l, err := next.Acquire(context.Background(), store.NewLockInfo("apply", "test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	raw, err := c.Client(t).Get(context.Background(), "/p/state")
	if err != nil {
		t.Fatal(err)
	}
	settled, err := pools.ParseState("state", raw.Kvs[0].Value)
	if err != nil || len(settled.Routes) != 3 || settled.Serial != 2 {
		t.Fatalf("the lock did not settle the journal: %+v %v", settled, err)
	}
	again, _ := next.Read()
	if len(again.Routes) != 3 || again.Serial != 2 {
		t.Fatalf("replayed twice: %+v", again)
	}
	if _, err := next.BeginJournal("a2"); err != nil {
		t.Fatal(err)
	}
	if again, _ := next.Read(); len(again.Routes) != 3 || again.Serial != 2 {
		t.Fatalf("after the next journal began: %+v", again)
	}
	if last, _ := next.LastApply(); last == nil || last.Apply != "a2" {
		t.Fatalf("last apply: %+v", last)
	}
}
