package etcdjournal

import (
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/pools"
)

// fakeStore fails the commits it is told to, in order.
type fakeStore struct {
	fails   []bool // per commit: true fails it as a leader change, false as lost
	commits []string
}

func (f *fakeStore) Commit(op clientv3.Op) (bool, error) {
	f.commits = append(f.commits, string(op.KeyBytes()))
	if len(f.fails) > 0 {
		retry := f.fails[0]
		f.fails = f.fails[1:]
		return retry, errors.New("failed")
	}
	return false, nil
}

func (f *fakeStore) Save(*pools.State, func() ([]clientv3.Op, error)) error { return nil }

// A record whose write meets a leader change is written again, under the
// same key; a write that fails otherwise fails it and every record after.
func TestARecordIsWrittenAgainAfterALeaderChangeOnly(t *testing.T) {
	s := &fakeStore{fails: []bool{true, true}}
	w := NewWriter(s, "p/journal/", "a1", 3)
	if err := w.Append(journal.Record{Event: journal.StepStarted, Step: "x"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"p/journal/000000000003", "p/journal/000000000003", "p/journal/000000000003"}
	if len(s.commits) != 3 || s.commits[2] != want[2] || s.commits[0] != want[0] {
		t.Fatalf("commits %q, want %q", s.commits, want)
	}
	s.fails, s.commits = []bool{false}, nil
	if err := w.Append(journal.Record{Event: journal.StepStarted, Step: "y"}); err == nil || len(s.commits) != 1 {
		t.Fatalf("a failed write: %v after %d commits", err, len(s.commits))
	}
	if err := w.End("done"); err == nil || len(s.commits) != 1 {
		t.Fatalf("a record after a failed write: %v, %d commits", err, len(s.commits))
	}
}
