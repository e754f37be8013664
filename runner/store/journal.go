package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	"poolc.dev/poolc/internal/atomicfile"
	"poolc.dev/poolc/pools"
)

// JournalEvent is what a journal record says happened.
type JournalEvent string

// The journal events. An apply's records start with ApplyStarted and, when
// it was not killed, end with ApplyEnded. Snapshot announces a state file
// written during the apply.
const (
	ApplyStarted  JournalEvent = "apply-started"
	StepStarted   JournalEvent = "started"
	StepFinished  JournalEvent = "finished"
	StepFailed    JournalEvent = "failed"
	StepSkipped   JournalEvent = "skipped"
	StepCancelled JournalEvent = "cancelled"
	Snapshot      JournalEvent = "snapshot"
	ApplyEnded    JournalEvent = "apply-ended"
)

// Record is one line of the journal.
type Record struct {
	Time    time.Time    `json:"time"`
	Apply   string       `json:"apply"`
	Event   JournalEvent `json:"event"`
	Step    string       `json:"step,omitempty"`
	Message string       `json:"message,omitempty"`
	// Effect is, on a StepFinished record, the step as the state records
	// it: what Read replays when no snapshot holds it yet.
	Effect *pools.Step `json:"effect,omitempty"`
	// Lineage and Serial name a state file, on ApplyStarted (the state
	// the apply started from) and Snapshot records; Finished is how many
	// of the apply's StepFinished records that state file holds.
	Lineage  string `json:"lineage,omitempty"`
	Serial   int64  `json:"serial,omitempty"`
	Finished int    `json:"finished,omitempty"`
}

// Journal appends the records of one apply. A record is written to the
// OS before Append returns (or the wait Queue returns does), so a killed
// process leaves whole lines and loses none it reported; End syncs.
//
// Where the journal file can be mapped into memory (Linux), Queue copies
// each record into the mapping, which puts it in the OS's page cache as
// a write call would, with no system call and nothing to wait for.
// Elsewhere records are written by group commit: the caller that finds no
// write under way writes every record queued so far with one write call,
// and the records queued meanwhile wait for the next one. Under parallel
// steps that is one system call for several records, in the order they
// were queued.
type Journal struct {
	f      *File
	fh     *os.File
	apply  string
	mapped *mappedLog // the file's mapping, or nil to write

	mu      sync.Mutex
	flushed *sync.Cond // a write ended
	pending []byte     // queued records, one line each, not yet written
	spare   []byte     // the buffer of the last write, reused
	queued  uint64     // records queued so far
	written uint64     // records whose write has ended
	writing bool       // a caller is writing a batch
	failed  uint64     // the first record of the batch that failed; 0 none
	err     error      // why it failed; every later record fails too

	// What End needs to fold the journal: the apply's first record, how
	// many finished steps it journaled with an effect, and the last
	// snapshot known to be on disk.
	started Record
	effects int
	onDisk  *Record
}

func newJournal(f *File, fh *os.File, apply string) *Journal {
	j := &Journal{f: f, fh: fh, apply: apply}
	j.flushed = sync.NewCond(&j.mu)
	return j
}

// Interrupted describes an apply that did not end: its ID, the steps it
// had started but not finished and, for each, the plugin it was sent to
// (the message of its StepStarted record).
type Interrupted struct {
	Apply    string
	InFlight []string
	Plugin   map[string]string
}

// journalScan is what the journal says about the last apply.
type journalScan struct {
	apply   string
	ended   bool
	effects []pools.Step // the effects of its finished steps, in order
	marks   []Record     // its ApplyStarted and Snapshot records
	open    map[string]bool
	order   []string          // steps in the order they first started
	plugin  map[string]string // the plugin of each started step
}

// after returns the effects the state file of lineage and serial does not
// hold: those finished after the last record that names that file. When
// no record names it, the file is not one the last apply wrote (it was
// written since), and nothing is replayed.
func (s *journalScan) after(lineage string, serial int64) []pools.Step {
	for i := len(s.marks) - 1; i >= 0; i-- {
		if m := s.marks[i]; m.Lineage == lineage && m.Serial == serial {
			return s.effects[min(m.Finished, len(s.effects)):]
		}
	}
	return nil
}

func newScan() *journalScan { return &journalScan{open: map[string]bool{}} }

// add folds the next record of the journal into the scan.
func (s *journalScan) add(r Record) {
	switch r.Event {
	case ApplyStarted:
		*s = journalScan{apply: r.Apply, open: map[string]bool{}, marks: []Record{r}}
	case ApplyEnded:
		s.ended = true
	case Snapshot:
		s.marks = append(s.marks, r)
	case StepStarted:
		if !s.open[r.Step] {
			s.order = append(s.order, r.Step)
		}
		s.open[r.Step] = true
		if s.plugin == nil {
			s.plugin = map[string]string{}
		}
		s.plugin[r.Step] = r.Message
	case StepFinished:
		if r.Effect != nil {
			s.effects = append(s.effects, *r.Effect)
		}
		delete(s.open, r.Step)
	default:
		delete(s.open, r.Step)
	}
}

// interrupted is the last apply if it did not end, or nil.
func (s *journalScan) interrupted() *Interrupted {
	if s.apply == "" || s.ended {
		return nil
	}
	last := &Interrupted{Apply: s.apply, Plugin: map[string]string{}}
	for _, id := range s.order {
		if s.open[id] {
			last.InFlight = append(last.InFlight, id)
			last.Plugin[id] = s.plugin[id]
		}
	}
	return last
}

// replay applies to st the effects the journal holds and st does not
// (see after), and returns how many it applied; where names the journal
// in errors.
func (s *journalScan) replay(st *pools.State, where string) (int, error) {
	after := s.after(st.Lineage, st.Serial)
	if err := st.Fleet.ApplyAll(after); err != nil {
		return 0, fmt.Errorf("%s: replaying a finished step onto state serial %d: %w", where, st.Serial, err)
	}
	return len(after), nil
}

// JournalRecords is the journal of a backend that keeps records rather
// than a file (etcdstore): the records of the last apply, oldest first.
type JournalRecords []Record

// Replay applies to st the effects of the steps the records say finished
// after the last snapshot of st's lineage and serial, as File.Read does
// with its journal, and returns how many it applied.
func (rs JournalRecords) Replay(st *pools.State, where string) (int, error) {
	return rs.scan().replay(st, where)
}

// Finished is how many StepFinished records with an effect the last apply
// journaled: what a snapshot holding all of them announces.
func (rs JournalRecords) Finished() int { return len(rs.scan().effects) }

// Interrupted is the last apply if it did not end, or nil.
func (rs JournalRecords) Interrupted() *Interrupted { return rs.scan().interrupted() }

func (rs JournalRecords) scan() *journalScan {
	s := newScan()
	for _, r := range rs {
		s.add(r)
	}
	return s
}

func (f *File) scanJournal() (*journalScan, error) {
	s := newScan()
	fh, err := os.Open(f.JournalPath())
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue // a torn last line
		}
		s.add(r)
	}
	return s, sc.Err()
}

// LastApply reads the journal and reports the last apply if it was
// interrupted (killed before its end record), or nil.
func (f *File) LastApply() (*Interrupted, error) {
	s, err := f.scanJournal()
	if err != nil {
		return nil, err
	}
	return s.interrupted(), nil
}

// StartJournal begins the journal of a new apply, replacing the previous
// apply's records; its first record names the state file as it is now.
// The caller holds the lock, which has settled the previous journal.
func (f *File) StartJournal(apply string) (*Journal, error) {
	lineage, serial, err := f.probe()
	if err != nil {
		return nil, err
	}
	// A new file, not the old one cut short: a process that still maps
	// the old one (an apply whose lock was forced away) keeps its own.
	if err := os.Remove(f.JournalPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("replacing the journal: %w", err)
	}
	fh, err := os.OpenFile(f.JournalPath(), os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o666)
	if err != nil {
		return nil, fmt.Errorf("opening the journal: %w", err)
	}
	j := newJournal(f, fh, apply)
	j.mapped = mapLog(fh, 0)
	if err := j.Append(Record{Event: ApplyStarted, Lineage: lineage, Serial: serial}); err != nil {
		fh.Close()
		return nil, err
	}
	if err := fh.Sync(); err != nil {
		fh.Close()
		return nil, fmt.Errorf("writing the journal: %w", err)
	}
	return j, nil
}

// Add appends a record of a step event.
func (j *Journal) Add(ev JournalEvent, step, message string) error {
	return j.Append(Record{Event: ev, Step: step, Message: message})
}

// Append appends r, stamped with the time and the apply's ID, and
// returns once it is written.
func (j *Journal) Append(r Record) error { return j.Queue(r)() }

// Queue stamps r with the time and the apply's ID and queues it after the
// records queued before; the wait it returns returns once r is written,
// with the error that kept it from being written. Queue never blocks on
// the disk, so a caller may queue under a lock that orders its records
// and wait after releasing it.
func (j *Journal) Queue(r Record) (wait func() error) {
	r.Time, r.Apply = time.Now().UTC(), j.apply
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		err := j.err
		return func() error { return err }
	}
	// Encoding straight into the queue (a microsecond or two) copies
	// nothing and allocates nothing.
	line, err := appendRecord(j.pending, &r)
	if err != nil {
		return func() error { return err }
	}
	j.pending = append(line, '\n')
	j.queued++
	switch {
	case r.Event == ApplyStarted:
		j.started = r
	case r.Event == StepFinished && r.Effect != nil:
		j.effects++
	}
	seq := j.queued
	if j.mapped != nil {
		err := j.mapped.append(j.pending)
		j.pending, j.written = j.pending[:0], seq
		if err != nil {
			j.failed, j.err = seq, err
			return func() error { return err }
		}
		return mappedWait
	}
	return func() error { return j.wait(seq) }
}

// mappedWait is the wait of a record copied into the mapped journal: it
// is written already.
func mappedWait() error { return nil }

// wait returns once record seq is written, writing the queued records
// itself when no other caller is.
func (j *Journal) wait(seq uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.written < seq {
		if j.writing {
			j.flushed.Wait()
			continue
		}
		batch, first, last := j.pending, j.written+1, j.queued
		j.pending, j.writing = j.spare[:0], true
		j.mu.Unlock()
		_, err := j.fh.Write(batch)
		j.mu.Lock()
		j.spare, j.writing, j.written = batch, false, last
		if err != nil && j.err == nil {
			j.failed, j.err = first, fmt.Errorf("writing the journal: %w", err)
		}
		j.flushed.Broadcast()
	}
	if j.err != nil && seq >= j.failed {
		return j.err
	}
	return nil
}

// Snapshot writes st to the state file as the next serial, announced as
// holding the first finished steps of the apply (see File.WriteSnapshot).
func (j *Journal) Snapshot(st *pools.State, finished int) error {
	if err := j.f.WriteSnapshot(st, j, finished); err != nil {
		return err
	}
	j.mu.Lock()
	j.onDisk = &Record{Event: Snapshot, Lineage: st.Lineage, Serial: st.Serial, Finished: finished}
	j.mu.Unlock()
	return nil
}

// Sync flushes the journal to disk (records copied into the mapping
// too: fsync writes back every dirty page of the file).
func (j *Journal) Sync() error { return j.fh.Sync() }

// cutTail cuts the journal after its last whole line. What a killed
// writer left after it (a torn line, or the NUL bytes of the mapping's
// last chunk) is no record, and would make the next one unreadable.
func cutTail(fh *os.File) error {
	data, err := io.ReadAll(fh)
	if err != nil {
		return err
	}
	if end := bytes.LastIndexByte(data, '\n') + 1; end < len(data) {
		return fh.Truncate(int64(end))
	}
	return nil
}

// End records the end of the apply and closes the journal. When the state
// file on disk holds every step the apply finished, the journal is then
// folded (see fold), so the commands after the apply read one small file.
func (j *Journal) End(message string) error {
	end := Record{Event: ApplyEnded, Message: message}
	err := j.Append(end)
	if j.mapped != nil {
		j.mu.Lock()
		err = errors.Join(err, j.mapped.close())
		j.mapped = nil
		j.mu.Unlock()
	}
	if err = errors.Join(err, j.fh.Sync(), j.fh.Close()); err != nil {
		return err
	}
	if j.onDisk == nil || j.onDisk.Finished < j.effects {
		return nil
	}
	end.Time, end.Apply = time.Now().UTC(), j.apply
	return j.fold(end)
}

// fold replaces the journal of an apply that ended, whose last snapshot on
// disk holds all its finished steps, with the three records that still
// say something: its start, that snapshot (holding everything, so Read
// replays nothing) and its end. The step records go: no read needs them,
// since the apply was not interrupted. The file is replaced whole
// (atomicfile), so a kill leaves either journal, both of which read alike.
func (j *Journal) fold(end Record) error {
	snap := *j.onDisk
	snap.Time, snap.Apply, snap.Finished = end.Time, j.apply, 0
	var out []byte
	for _, r := range []Record{j.started, snap, end} {
		line, err := appendRecord(out, &r)
		if err != nil {
			return err
		}
		out = append(line, '\n')
	}
	if err := atomicfile.Write(j.f.JournalPath(), out, 0o666); err != nil {
		return fmt.Errorf("folding the journal: %w", err)
	}
	return nil
}
