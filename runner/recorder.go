package runner

import (
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store"
)

// FileRecorder records a run in a state backend (the file, or a team
// store) and its journal. It carries
// the lineage and serial from one write to the next, since the runner
// hands over snapshots of the state.
type FileRecorder struct {
	store   store.Backend
	journal store.JournalWriter
	lineage string
	serial  int64
}

// NewFileRecorder records into st and j, continuing from the state st
// last held (its lineage and serial).
func NewFileRecorder(st store.Backend, j store.JournalWriter, from *pools.State) *FileRecorder {
	return &FileRecorder{store: st, journal: j, lineage: from.Lineage, serial: from.Serial}
}

// WriteState writes a snapshot as the next serial of the lineage.
func (r *FileRecorder) WriteState(st *pools.State) error {
	st.Lineage, st.Serial = r.lineage, r.serial
	if err := r.store.Write(st); err != nil {
		return err
	}
	r.lineage, r.serial = st.Lineage, st.Serial
	return nil
}

// Journal appends a step event to the journal.
func (r *FileRecorder) Journal(ev store.JournalEvent, step, message string) {
	r.journal.Add(ev, step, message)
}
