package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/pools"
)

// Journal is the etcd backend of the journal (see package journal): it
// appends the records of one apply as keys P/journal/<seq>, each
// written while the Store still holds the lock it was started under.
// Once a write failed, every later one fails at once with that error: a
// journal with a record missing in the middle would tell a successor a
// wrong story, and a cluster without a majority would make each write
// wait out its time limit.
type Journal struct {
	s     *Store
	apply string
	mu    sync.Mutex // orders the records: held while one is written
	seq   int
	err   error // the first write that failed
}

var _ journal.Writer = (*Journal)(nil)

// A journal write that fails because etcd lost its leader is tried again,
// leaderChangeAttempts times in all, leaderChangeWait apart: long enough
// for a cluster with a majority to elect another leader, short enough
// that a cluster without one fails the apply soon.
const (
	leaderChangeAttempts = 4
	leaderChangeWait     = 500 * time.Millisecond
)

func (s *Store) journalKey(seq int) string { return s.key(fmt.Sprintf("journal/%012d", seq)) }

// record is r stamped with the time and apply, as stored.
func record(apply string, r journal.Record) (string, error) {
	b, err := journal.Encode(apply, r)
	return string(b), err
}

// BeginJournal replaces the previous apply's records with the start of a
// new apply, in one transaction conditioned on the state being the one
// this Store read. The start record names that state and the lock it is
// written under. A journal holding finished steps the state does not (a
// killed apply's, before Acquire settled it) is refused, not dropped.
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
	rec, err := record(apply, start)
	if err != nil {
		return nil, err
	}
	// The records before seq go; etcd refuses a put inside a range
	// deleted in the same transaction, so the range ends at the new key.
	seq := snap.lastSeq + 1
	resp, err := s.txn([]clientv3.Cmp{s.stateAt(s.rev)},
		clientv3.OpDelete(s.key("journal/"), clientv3.WithRange(s.journalKey(seq))),
		clientv3.OpPut(s.journalKey(seq), rec))
	if err != nil {
		return nil, unavailable("starting the journal in etcd", err)
	}
	if !resp.Succeeded {
		return nil, s.refused()
	}
	return &Journal{s: s, apply: apply, seq: seq + 1}, nil
}

// Append appends r, stamped with the time and the apply's ID, once etcd
// has committed it.
func (j *Journal) Append(r journal.Record) error {
	rec, err := record(j.apply, r)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	j.s.mu.Lock()
	defer j.s.mu.Unlock()
	resp, err := j.s.txn(nil, clientv3.OpPut(j.s.journalKey(j.seq), rec))
	for attempt := 1; attempt < leaderChangeAttempts && err != nil && NoQuorum(err) && !errors.Is(err, context.DeadlineExceeded); attempt++ {
		// A leader lost mid-write: the cluster elects another within a
		// few election timeouts; the put is the same key and value, so
		// writing it again is safe.
		time.Sleep(leaderChangeWait)
		resp, err = j.s.txn(nil, clientv3.OpPut(j.s.journalKey(j.seq), rec))
	}
	switch {
	case err != nil:
		j.err = unavailable("writing the journal to etcd", err)
	case !resp.Succeeded:
		j.err = ErrLockLost
	default:
		j.seq++
	}
	return j.err
}

// Snapshot writes st as the next serial of its lineage and, in the same
// transaction, the record announcing that it holds the first finished
// steps of the apply.
func (j *Journal) Snapshot(st *pools.State, finished int) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	j.s.mu.Lock()
	defer j.s.mu.Unlock()
	err := j.s.writeState(st, "writing a snapshot of the state to etcd", func() ([]clientv3.Op, error) {
		rec, err := record(j.apply, journal.Record{Event: journal.Snapshot, Lineage: st.Lineage, Serial: st.Serial, Finished: finished})
		return []clientv3.Op{clientv3.OpPut(j.s.journalKey(j.seq), rec)}, err
	})
	if err == nil {
		j.seq++
	} else {
		j.err = err
	}
	return err
}

// End records the end of the apply.
func (j *Journal) End(message string) error {
	return j.Append(journal.Record{Event: journal.ApplyEnded, Message: message})
}
