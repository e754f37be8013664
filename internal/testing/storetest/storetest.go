// Package storetest holds the behaviour every state backend
// (store.Backend) must show, as tests each backend's package runs with its
// own constructor: the file backend in runner/store, the etcd backend in
// runner/store/etcdstore.
package storetest

import (
	"context"
	"reflect"
	"testing"

	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/runner/store"
)

// JournalTellsAnInterruptedApply checks that LastApply reports an apply
// killed before its end record, with the steps it left in flight, to the
// next process, and reports nothing once a later apply has ended. open
// returns the backend under test; each call opens the same store anew, as
// another poolc process would. kill, when not nil, is called where the
// apply is killed and leaves in the journal what a kill in the middle of
// a write would (a torn record, for a file).
func JournalTellsAnInterruptedApply(t *testing.T, open func() store.Backend, kill func(store.Backend)) {
	t.Helper()
	s := open()
	if last, err := s.LastApply(); last != nil || err != nil {
		t.Fatalf("%s: no journal: %v %v", s, last, err)
	}
	l, err := s.Acquire(context.Background(), store.NewLockInfo("apply", "test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	j, err := s.BeginJournal("a1")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		ev   journal.Event
		step string
	}{{journal.StepStarted, "start:x@n"}, {journal.StepStarted, "start:y@n"}, {journal.StepFinished, "start:x@n"}} {
		if err := j.Append(journal.Record{Event: r.ev, Step: r.step}); err != nil {
			t.Fatal(err)
		}
	}
	// Killed here: no end record, and the lock released (or lapsed).
	if kill != nil {
		kill(s)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	last, err := open().LastApply()
	if err != nil || last == nil || last.Apply != "a1" || !reflect.DeepEqual(last.InFlight, []string{"start:y@n"}) {
		t.Fatalf("%s: last apply = %+v, %v", s, last, err)
	}
	l2, err := s.Acquire(context.Background(), store.NewLockInfo("apply", "test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Unlock()
	j2, err := s.BeginJournal("a2")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []journal.Event{journal.StepStarted, journal.StepFinished} {
		if err := j2.Append(journal.Record{Event: ev, Step: "stop:x@n"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := j2.End("done"); err != nil {
		t.Fatal(err)
	}
	if last, err := open().LastApply(); last != nil || err != nil {
		t.Fatalf("%s: a finished apply reported as interrupted: %+v %v", s, last, err)
	}
}
