// Package etcdjournal is the etcd backend of package journal: the
// records of the last apply kept as keys PREFIX<seq>, in order, written
// through the state store that holds them (runner/store/etcdstore),
// which conditions every write on still holding its lock and writes each
// snapshot in one transaction with the record that announces it.
package etcdjournal

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/pools"
)

// Keys is the prefix of a journal's keys; record seq is the prefix
// followed by seq in 12 digits, so that key order is record order.
type Keys string

// Key is record seq's key.
func (k Keys) Key(seq int) string { return fmt.Sprintf("%s%012d", k, seq) }

// Get is the operation that reads every record, in order.
func (k Keys) Get() clientv3.Op { return clientv3.OpGet(string(k), clientv3.WithPrefix()) }

// Parse reads the records a Get returned and the sequence number of the
// last (-1 when there is none).
func (k Keys) Parse(kvs []*mvccpb.KeyValue) (journal.Records, int, error) {
	var rs journal.Records
	last := -1
	for _, kv := range kvs { // in key order
		r, err := journal.Decode(kv.Value)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", kv.Key, err)
		}
		seq, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), string(k)))
		if err != nil {
			return nil, 0, fmt.Errorf("%s: not a journal key", kv.Key)
		}
		rs, last = append(rs, r), seq
	}
	return rs, last, nil
}

// Put is the operation that puts r, stamped with the time and apply, as
// record seq.
func (k Keys) Put(seq int, apply string, r journal.Record) (clientv3.Op, error) {
	b, err := journal.Encode(apply, r)
	return clientv3.OpPut(k.Key(seq), string(b)), err
}

// Begin is the operations that replace the records before seq with r as
// record seq, the first of a new apply. etcd refuses a put inside a range
// deleted in the same transaction, so the range ends at the new key.
func (k Keys) Begin(seq int, apply string, r journal.Record) ([]clientv3.Op, error) {
	put, err := k.Put(seq, apply, r)
	if err != nil {
		return nil, err
	}
	return []clientv3.Op{clientv3.OpDelete(string(k), clientv3.WithRange(k.Key(seq))), put}, nil
}

// Store is the state store a journal is kept in.
type Store interface {
	// Commit runs op in a transaction conditioned on the store still
	// holding its lock; retry says its error is a leader lost mid-write,
	// which may pass when tried again.
	Commit(op clientv3.Op) (retry bool, err error)
	// Save writes st as the next serial of its lineage with the
	// operations with returns (called once st has its new serial), in
	// one transaction conditioned as Commit's.
	Save(st *pools.State, with func() ([]clientv3.Op, error)) error
}

// A record whose write failed because etcd lost its leader is written
// again, LeaderChangeAttempts times in all, LeaderChangeWait apart: long
// enough for a cluster with a majority to elect another leader, short
// enough that a cluster without one fails the apply soon.
const (
	// LeaderChangeAttempts is how many times in all a record is written
	// when etcd loses its leader.
	LeaderChangeAttempts = 4
	// LeaderChangeWait is the wait between two of those writes.
	LeaderChangeWait = 500 * time.Millisecond
)

// Writer appends the records of one apply. Once a write failed, every
// later one fails at once with that error: a journal with a record
// missing in the middle would tell a successor a wrong story, and a
// cluster without a majority would make each write wait out its time
// limit.
type Writer struct {
	store Store
	keys  Keys
	apply string
	mu    sync.Mutex // orders the records: held while one is written
	seq   int        // the next record's
	err   error      // the first write that failed
}

var _ journal.Writer = (*Writer)(nil)

// NewWriter appends the records of apply to keys in s, the next one as
// record seq.
func NewWriter(s Store, keys Keys, apply string, seq int) *Writer {
	return &Writer{store: s, keys: keys, apply: apply, seq: seq}
}

// Append appends r, stamped with the time and the apply's ID, once etcd
// has committed it.
func (w *Writer) Append(r journal.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	op, err := w.keys.Put(w.seq, w.apply, r)
	if err != nil {
		return err
	}
	retry, err := w.store.Commit(op)
	for attempt := 1; attempt < LeaderChangeAttempts && retry; attempt++ {
		// The same key and value: writing it again is safe.
		time.Sleep(LeaderChangeWait)
		retry, err = w.store.Commit(op)
	}
	if err != nil {
		w.err = err
		return err
	}
	w.seq++
	return nil
}

// Snapshot writes st as the next serial of its lineage and, in the same
// transaction, the record announcing that it holds the first finished
// steps of the apply.
func (w *Writer) Snapshot(st *pools.State, finished int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	err := w.store.Save(st, func() ([]clientv3.Op, error) {
		op, err := w.keys.Put(w.seq, w.apply, journal.Record{Event: journal.Snapshot, Lineage: st.Lineage, Serial: st.Serial, Finished: finished})
		return []clientv3.Op{op}, err
	})
	if err != nil {
		w.err = err
		return err
	}
	w.seq++
	return nil
}

// End records the end of the apply.
func (w *Writer) End(message string) error {
	return w.Append(journal.Record{Event: journal.ApplyEnded, Message: message})
}
