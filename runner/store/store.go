// Package store keeps a pool's state in a JSON file beside its
// configuration, written atomically (temporary file, fsync, rename) with a
// lineage and a serial, guarded by an OS lock on a lock file that also
// says who holds it, and accompanied by a journal of the steps each apply
// started and finished.
//
// An apply does not rewrite the state after every step: the journal
// records each finished step with its effect, and the state file is a
// snapshot taken now and then (see runner). Every snapshot is announced in
// the journal with the number of finished steps it holds, so Read, given
// the state file and the journal, replays exactly the steps that finished
// after the last snapshot: a kill loses nothing the journal recorded.
package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"poolc.dev/poolc/internal/atomicfile"
	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/pools"
)

// File is the state of one pool in one file. Its lock and journal live
// beside it, as PATH.lock and PATH.journal.
type File struct {
	Path string
	// settled is the state as the lock's settle read it, handed to the
	// next Read so that a command holding the lock reads the state once;
	// every write forgets it.
	settled *pools.State
	// seen is what this File last read or wrote, so that a command
	// reads the state file and the journal once.
	seen *seen
}

// seen is what a File knows of its files from its last read or write:
// the state file's lineage and serial and, once read, the last apply if
// it was interrupted. A new journal forgets it.
type seen struct {
	lineage     string
	serial      int64
	read        bool // the journal was read: interrupted is known
	interrupted *journal.Interrupted
}

// Open returns the store for the state file at path; the file need not
// exist yet.
func Open(path string) *File { return &File{Path: path} }

// LockPath is the lock file's path.
func (f *File) LockPath() string { return f.Path + ".lock" }

// JournalPath is the journal file's path.
func (f *File) JournalPath() string { return journal.Beside(f.Path) }

// Read returns the state: the state file (or an empty state, serial 0 and
// no lineage, when there is none yet) with the effects of the steps the
// last apply journaled as finished after its last snapshot of this file.
func (f *File) Read() (*pools.State, error) {
	if st := f.settled; st != nil {
		f.settled = nil
		return st, nil
	}
	st, _, _, err := f.read()
	return st, err
}

// read is Read, also returning the journal's records and how many of
// their effects it replayed.
func (f *File) read() (*pools.State, journal.Records, int, error) {
	st, err := f.readSnapshot()
	if err != nil {
		return nil, nil, 0, err
	}
	recs, err := journal.ReadFile(f.JournalPath())
	if err != nil {
		return nil, nil, 0, err
	}
	f.seen = &seen{lineage: st.Lineage, serial: st.Serial, read: true, interrupted: recs.Interrupted()}
	n, err := recs.Replay(st, f.JournalPath())
	if err != nil {
		return nil, nil, 0, err
	}
	return st, recs, n, nil
}

func (f *File) readSnapshot() (*pools.State, error) {
	data, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		st := &pools.State{FormatVersion: pools.StateFormatVersion}
		st.Normalize()
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	return pools.ParseState(f.Path, data)
}

// Write replaces the state file with st, after giving st a lineage if it
// has none and incrementing its serial.
func (f *File) Write(st *pools.State) error { return f.save(st, nil) }

// save is Write, calling announce (when not nil) once st has its new
// serial and before the file is replaced: the journal of an apply in
// progress records there that the new serial holds the effects of its
// first finished steps, so that Read replays only those after them.
func (f *File) save(st *pools.State, announce func() error) error {
	f.settled = nil
	if st.Lineage == "" {
		st.Lineage = NewID()
	}
	st.Serial++
	data, err := st.MarshalCompact()
	if err == nil && announce != nil {
		err = announce()
	}
	if err == nil {
		err = atomicfile.Write(f.Path, data, 0o666)
	}
	if err != nil {
		st.Serial--
		return fmt.Errorf("writing state: %w", err)
	}
	if f.seen != nil {
		f.seen.lineage, f.seen.serial = st.Lineage, st.Serial
	} else {
		f.seen = &seen{lineage: st.Lineage, serial: st.Serial}
	}
	return nil
}

// LastApply reads the journal and reports the last apply if it was
// interrupted (killed before its end record), or nil.
func (f *File) LastApply() (*journal.Interrupted, error) {
	if f.seen != nil && f.seen.read {
		return f.seen.interrupted, nil
	}
	recs, err := journal.ReadFile(f.JournalPath())
	if err != nil {
		return nil, err
	}
	return recs.Interrupted(), nil
}

// BeginJournal begins the journal of a new apply, replacing the previous
// apply's records; its first record names the state file as it is now.
// The caller holds the lock, which has settled the previous journal.
func (f *File) BeginJournal(apply string) (journal.Writer, error) {
	var lineage string
	var serial int64
	if f.seen != nil {
		lineage, serial = f.seen.lineage, f.seen.serial
	} else {
		var err error
		if lineage, serial, err = f.probe(); err != nil {
			return nil, err
		}
	}
	f.seen = &seen{lineage: lineage, serial: serial}
	j, err := journal.Start(f.JournalPath(), apply, lineage, serial, f.save)
	if err != nil {
		return nil, err
	}
	return j, nil
}

// settle tidies up after a holder of the lock that was killed: it removes
// the temporary files of its writes and writes the steps its journal says
// finished after its last snapshot, announced in the journal, so that the
// next apply's journal can replace it. The caller holds the lock.
func (f *File) settle() error {
	if err := atomicfile.Clean(f.Path); err != nil {
		return fmt.Errorf("removing the temporary files a killed write left: %w", err)
	}
	st, recs, replayed, err := f.read()
	if err != nil {
		return err
	}
	if replayed == 0 {
		f.settled = st
		return nil
	}
	j, err := journal.Continue(f.JournalPath(), recs.Apply(), f.save)
	if err != nil {
		return fmt.Errorf("settling the journal: %w", err)
	}
	err = j.Snapshot(st, recs.Finished())
	if err = errors.Join(err, j.Close()); err == nil {
		f.settled = st
	}
	return err
}

// probe reads the lineage and serial of the state file.
func (f *File) probe() (lineage string, serial int64, err error) {
	data, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	var p struct {
		Lineage string `json:"lineage"`
		Serial  int64  `json:"serial"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return "", 0, fmt.Errorf("%s: %w", f.Path, err)
	}
	return p.Lineage, p.Serial, nil
}

// NewID returns a random identifier for lineages, locks and applies.
func NewID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("poolc: no randomness: " + err.Error())
	}
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
