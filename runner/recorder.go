package runner

import (
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store"
)

// FileRecorder records a run in a state file and its journal. It carries
// the lineage and serial from one snapshot to the next, since the runner
// hands over copies of the state.
type FileRecorder struct {
	store   *store.File
	journal *store.Journal
	lineage string
	serial  int64
}

var _ Recorder = (*FileRecorder)(nil)

// NewFileRecorder records into st and j, continuing from the state st
// last held (its lineage and serial).
func NewFileRecorder(st *store.File, j *store.Journal, from *pools.State) *FileRecorder {
	return &FileRecorder{store: st, journal: j, lineage: from.Lineage, serial: from.Serial}
}

// WriteState writes a snapshot as the next serial of the lineage,
// announced in the journal with the number of finished steps it holds.
func (r *FileRecorder) WriteState(st *pools.State, finished int) error {
	st.Lineage, st.Serial = r.lineage, r.serial
	if err := r.store.WriteSnapshot(st, r.journal, finished); err != nil {
		return err
	}
	r.lineage, r.serial = st.Lineage, st.Serial
	return nil
}

// Journal appends a record to the journal.
func (r *FileRecorder) Journal(rec store.Record) error { return r.journal.Append(rec) }
