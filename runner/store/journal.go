package store

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"
)

// JournalEvent is what a journal record says happened.
type JournalEvent string

// The journal events. An apply's records start with ApplyStarted and, when
// it was not killed, end with ApplyEnded.
const (
	ApplyStarted  JournalEvent = "apply-started"
	StepStarted   JournalEvent = "started"
	StepFinished  JournalEvent = "finished"
	StepFailed    JournalEvent = "failed"
	StepSkipped   JournalEvent = "skipped"
	StepCancelled JournalEvent = "cancelled"
	ApplyEnded    JournalEvent = "apply-ended"
)

// Record is one line of the journal.
type Record struct {
	Time    time.Time    `json:"time"`
	Apply   string       `json:"apply"`
	Event   JournalEvent `json:"event"`
	Step    string       `json:"step,omitempty"`
	Message string       `json:"message,omitempty"`
}

// Journal appends the records of one apply. Each record is written with
// one write call, so a killed process leaves whole lines; Close syncs.
type Journal struct {
	mu    sync.Mutex
	fh    *os.File
	apply string
}

// Interrupted describes an apply that did not end: its ID and the steps it
// had started but not finished.
type Interrupted struct {
	Apply    string
	InFlight []string
}

// LastApply reads the journal and reports the last apply if it was
// interrupted (killed before its end record), or nil.
func (f *File) LastApply() (*Interrupted, error) {
	fh, err := os.Open(f.JournalPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var rp replay
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue // a torn last line
		}
		rp.add(r)
	}
	return rp.interrupted(), sc.Err()
}

// StartJournal begins the journal of a new apply, replacing the previous
// apply's records.
func (f *File) StartJournal(apply string) (*Journal, error) {
	fh, err := os.OpenFile(f.JournalPath(), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the journal: %w", err)
	}
	j := &Journal{fh: fh, apply: apply}
	if err := j.Add(ApplyStarted, "", ""); err != nil {
		fh.Close()
		return nil, err
	}
	return j, fh.Sync()
}

// Add appends a record.
func (j *Journal) Add(ev JournalEvent, step, message string) error {
	line, err := json.Marshal(Record{Time: time.Now().UTC(), Apply: j.apply, Event: ev, Step: step, Message: message})
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, err = j.fh.Write(append(line, '\n'))
	return err
}

// Sync flushes the journal to disk.
func (j *Journal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.fh.Sync()
}

// End records the end of the apply and closes the journal.
func (j *Journal) End(message string) error {
	err := j.Add(ApplyEnded, "", message)
	return errors.Join(err, j.fh.Sync(), j.fh.Close())
}
