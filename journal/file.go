package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"poolc.dev/poolc/internal/atomicfile"
	"poolc.dev/poolc/pools"
)

// SaveFunc writes st as the next serial of its lineage (giving it one if
// it has none) and calls announce, which journals the Snapshot record
// naming that serial, after st has its lineage and serial and before the
// state is stored: a state store's write.
type SaveFunc func(st *pools.State, announce func() error) error

// File is the journal of one apply in a file of JSON lines (an Appender),
// beside the state snapshots that save writes.
type File struct {
	log   *Appender
	path  string
	apply string
	save  SaveFunc

	mu sync.Mutex
	// What End needs to fold the journal: the apply's first record, how
	// many finished steps it journaled with an effect, and the last
	// snapshot known to be stored.
	started Record
	effects int
	onDisk  *Record
}

var (
	_ Writer = (*File)(nil)
	_ Queuer = (*File)(nil)
)

// Start begins the journal of a new apply at path, replacing the previous
// apply's records; its first record names the state (lineage and serial)
// the apply starts from, and is synced to the disk.
func Start(path, apply, lineage string, serial int64, save SaveFunc) (*File, error) {
	log, err := Create(path)
	if err != nil {
		return nil, err
	}
	j := &File{log: log, path: path, apply: apply, save: save}
	err = j.Append(Record{Event: ApplyStarted, Lineage: lineage, Serial: serial})
	if err == nil {
		err = log.Sync()
	}
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("writing the journal: %w", err)
	}
	return j, nil
}

// Continue opens the journal at path to append to an apply that was
// killed, to record the snapshot that settles it; Close it after.
func Continue(path, apply string, save SaveFunc) (*File, error) {
	log, err := Open(path)
	if err != nil {
		return nil, err
	}
	return &File{log: log, path: path, apply: apply, save: save}, nil
}

// ReadFile reads the records of the journal at path; lines that are no
// record (the torn tail of a killed write) are skipped.
func ReadFile(path string) (Records, error) {
	var rs Records
	_, err := Lines(path, func(_ int, line []byte) error {
		if r, err := Decode(line); err == nil {
			rs = append(rs, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the journal: %w", err)
	}
	return rs, nil
}

// Append appends r, stamped with the time and the apply's ID, and
// returns once it is written.
func (j *File) Append(r Record) error { return j.Queue(r)() }

// Queue stamps r with the time and the apply's ID and queues it after the
// records queued before; the wait it returns returns once r is written
// (see Appender).
func (j *File) Queue(r Record) (wait func() error) {
	r.Time, r.Apply = time.Now().UTC(), j.apply
	j.mu.Lock()
	switch {
	case r.Event == ApplyStarted:
		j.started = r
	case r.Event == StepFinished && r.Effect != nil:
		j.effects++
	}
	j.mu.Unlock()
	return j.log.Queue(r)
}

// Snapshot writes st with save as the next serial, announced as holding
// the first finished steps of the apply.
func (j *File) Snapshot(st *pools.State, finished int) error {
	err := j.save(st, func() error {
		return j.Append(Record{Event: Snapshot, Lineage: st.Lineage, Serial: st.Serial, Finished: finished})
	})
	if err != nil {
		return err
	}
	j.mu.Lock()
	j.onDisk = &Record{Event: Snapshot, Lineage: st.Lineage, Serial: st.Serial, Finished: finished}
	j.mu.Unlock()
	return nil
}

// Close syncs and closes the journal without ending the apply.
func (j *File) Close() error { return errors.Join(j.log.Flush(), j.log.Sync(), j.log.Close()) }

// End records the end of the apply and closes the journal. When the last
// snapshot stored holds every step the apply finished, the journal is
// then folded (see fold), so the commands after the apply read one small
// file.
func (j *File) End(message string) error {
	end := Record{Event: ApplyEnded, Message: message}
	if err := errors.Join(j.Append(end), j.Close()); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.onDisk == nil || j.onDisk.Finished < j.effects {
		return nil
	}
	end.Time, end.Apply = time.Now().UTC(), j.apply
	return j.fold(end)
}

// fold replaces the journal of an apply that ended, whose last snapshot
// stored holds all its finished steps, with the three records that still
// say something: its start, that snapshot (holding everything, so a read
// replays nothing) and its end. The step records go: no read needs them,
// since the apply was not interrupted. The file is replaced whole
// (atomicfile), so a kill leaves either journal, both of which read
// alike.
func (j *File) fold(end Record) error {
	snap := *j.onDisk
	snap.Time, snap.Apply, snap.Finished = end.Time, j.apply, 0
	var out []byte
	for _, r := range []Record{j.started, snap, end} {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		out = append(append(out, line...), '\n')
	}
	if err := atomicfile.Write(j.path, out, 0o666); err != nil {
		return fmt.Errorf("folding the journal: %w", err)
	}
	return nil
}
