package runner

import (
	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/pools"
)

// StoreRecorder records a run in a state backend's journal and the
// snapshots the journal announces (the state file, or a team store such
// as etcd). It carries the lineage and serial from one snapshot to the
// next, since the runner hands over copies of the state.
type StoreRecorder struct {
	journal journal.Writer
	lineage string
	serial  int64
}

var _ Recorder = (*StoreRecorder)(nil)

// NewStoreRecorder records into j, continuing from the state the backend
// last held (its lineage and serial).
func NewStoreRecorder(j journal.Writer, from *pools.State) *StoreRecorder {
	return &StoreRecorder{journal: j, lineage: from.Lineage, serial: from.Serial}
}

// WriteState writes a snapshot as the next serial of the lineage,
// announced in the journal with the number of finished steps it holds.
func (r *StoreRecorder) WriteState(st *pools.State, finished int) error {
	st.Lineage, st.Serial = r.lineage, r.serial
	if err := r.journal.Snapshot(st, finished); err != nil {
		return err
	}
	r.lineage, r.serial = st.Lineage, st.Serial
	return nil
}

// Journal queues a record in the journal when the backend can queue
// (journal.Queuer), so that records of parallel steps share writes;
// otherwise it appends the record before it returns.
func (r *StoreRecorder) Journal(rec journal.Record) (wait func() error) {
	if q, ok := r.journal.(journal.Queuer); ok {
		return q.Queue(rec)
	}
	err := r.journal.Append(rec)
	return func() error { return err }
}
