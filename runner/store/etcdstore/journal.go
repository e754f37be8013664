package etcdstore

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/journal/etcdjournal"
	"poolc.dev/poolc/pools"
)

// journalKeys are the keys of the journal, P/journal/<seq>.
func (s *Store) journalKeys() etcdjournal.Keys { return etcdjournal.Keys(s.key("journal/")) }

// BeginJournal replaces the previous apply's records with the start of a
// new apply, in one transaction conditioned on the state being the one
// this Store read. The start record names that state and the lock it is
// written under. A journal holding finished steps the state does not (a
// killed apply's, before Acquire settled it) is refused, not dropped.
// Every record after it is written while the Store still holds the lock
// it was started under (see etcdjournal.Writer).
func (s *Store) BeginJournal(apply string) (journal.Writer, error) {
	snap, err := s.read()
	if err != nil {
		return nil, err
	}
	if snap.replayed > 0 {
		return nil, fmt.Errorf("the journal in etcd %s holds %s the state does not: take the state lock first, which writes %s", s.prefix, plural.Count(snap.replayed, "finished step"), plural.Agree(snap.replayed, "it", "them"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	start := journal.Record{Event: journal.ApplyStarted, Lineage: snap.state.Lineage, Serial: snap.state.Serial}
	if s.owner != nil {
		start.Message = fmt.Sprintf("under lock %s (lease %x)", s.owner.info.ID, int64(s.owner.session.Lease()))
	}
	seq := snap.lastSeq + 1
	ops, err := s.journalKeys().Begin(seq, apply, start)
	if err != nil {
		return nil, err
	}
	resp, err := s.txn([]clientv3.Cmp{s.stateAt(s.rev)}, ops...)
	if err != nil {
		return nil, unavailable("starting the journal in etcd", err)
	}
	if !resp.Succeeded {
		return nil, s.refused()
	}
	return etcdjournal.NewWriter(journalStore{s}, s.journalKeys(), apply, seq+1), nil
}

// journalStore is the Store as the journal writes through it.
type journalStore struct{ s *Store }

// Commit puts a record while the Store holds its lock.
func (j journalStore) Commit(op clientv3.Op) (retry bool, err error) {
	j.s.mu.Lock()
	defer j.s.mu.Unlock()
	resp, err := j.s.txn(nil, op)
	switch {
	case err != nil:
		return NoQuorum(err) && !errors.Is(err, context.DeadlineExceeded), unavailable("writing the journal to etcd", err)
	case !resp.Succeeded:
		return false, ErrLockLost
	}
	return false, nil
}

// Save writes a snapshot of the state with the record announcing it.
func (j journalStore) Save(st *pools.State, with func() ([]clientv3.Op, error)) error {
	j.s.mu.Lock()
	defer j.s.mu.Unlock()
	return j.s.writeState(st, "writing a snapshot of the state to etcd", with)
}
