// Package store keeps a pool's state in a JSON file beside its
// configuration: written atomically (temporary file, fsync, rename) with a
// lineage and a serial, guarded by a lock file that says who holds it, and
// accompanied by a journal of the steps each apply started and finished.
package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"poolc.dev/poolc/internal/atomicfile"
	"poolc.dev/poolc/pools"
)

// File is the state of one pool in one file. Its lock and journal live
// beside it, as PATH.lock and PATH.journal.
type File struct {
	Path string
}

// Open returns the store for the state file at path; the file need not
// exist yet.
func Open(path string) *File { return &File{Path: path} }

// LockPath is the lock file's path.
func (f *File) LockPath() string { return f.Path + ".lock" }

// JournalPath is the journal file's path.
func (f *File) JournalPath() string { return f.Path + ".journal" }

// Read returns the state, or an empty state (serial 0, no lineage) when
// the file does not exist yet.
func (f *File) Read() (*pools.State, error) {
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
func (f *File) Write(st *pools.State) error {
	if st.Lineage == "" {
		st.Lineage = NewID()
	}
	st.Serial++
	data, err := st.Marshal()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(f.Path, data, 0o644); err != nil {
		st.Serial--
		return fmt.Errorf("writing state: %w", err)
	}
	return nil
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
