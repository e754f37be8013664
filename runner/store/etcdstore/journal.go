package etcdstore

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"poolc.dev/poolc/runner/store"
)

// Journal appends the records of one apply as keys P/journal/<seq>, each
// written while the Store still holds the lock it was started under.
type Journal struct {
	s     *Store
	apply string
	mu    sync.Mutex
	seq   int
}

var _ store.JournalWriter = (*Journal)(nil)

func (s *Store) journalKey(seq int) string { return s.key(fmt.Sprintf("journal/%012d", seq)) }

// BeginJournal replaces the previous apply's records with the start of a
// new apply. The start record names the lock it is
// written under, so a successor knows whose steps were in flight.
func (s *Store) BeginJournal(apply string) (store.JournalWriter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := ""
	if s.owner != nil {
		msg = fmt.Sprintf("under lock %s (lease %x)", s.owner.info.ID, int64(s.owner.session.Lease()))
	}
	first, err := record(apply, store.ApplyStarted, "", msg)
	if err != nil {
		return nil, err
	}
	// etcd refuses a put inside a range deleted in the same transaction:
	// two of them. Killed in between, the journal is empty, which is true:
	// no step of the new apply has started.
	for _, op := range []clientv3.Op{clientv3.OpDelete(s.key("journal/"), clientv3.WithPrefix()), clientv3.OpPut(s.journalKey(0), first)} {
		resp, err := s.txn(nil, op)
		if err != nil {
			return nil, unavailable("starting the journal in etcd", err)
		}
		if !resp.Succeeded {
			return nil, ErrLockLost
		}
	}
	return &Journal{s: s, apply: apply, seq: 1}, nil
}

func record(apply string, ev store.JournalEvent, step, message string) (string, error) {
	b, err := json.Marshal(store.Record{Time: time.Now().UTC(), Apply: apply, Event: ev, Step: step, Message: message})
	return string(b), err
}

// Add appends a record.
func (j *Journal) Add(ev store.JournalEvent, step, message string) error {
	rec, err := record(j.apply, ev, step, message)
	if err != nil {
		return err
	}
	j.mu.Lock()
	seq := j.seq
	j.seq++
	j.mu.Unlock()
	j.s.mu.Lock()
	defer j.s.mu.Unlock()
	resp, err := j.s.txn(nil, clientv3.OpPut(j.s.journalKey(seq), rec))
	if err != nil {
		return unavailable("writing the journal to etcd", err)
	}
	if !resp.Succeeded {
		return ErrLockLost
	}
	return nil
}

// End records the end of the apply.
func (j *Journal) End(message string) error { return j.Add(store.ApplyEnded, "", message) }

// LastApply reads the journal and reports the last apply if it was
// interrupted, or nil.
func (s *Store) LastApply() (*store.Interrupted, error) {
	ctx, cancel := opCtx()
	defer cancel()
	resp, err := s.cli.Get(ctx, s.key("journal/"), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, unavailable("reading the journal from etcd", err)
	}
	records := make([]store.Record, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var r store.Record
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", kv.Key, err)
		}
		records = append(records, r)
	}
	return store.Replay(records), nil
}
