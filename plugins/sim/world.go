package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"poolc.dev/poolc/internal/atomicfile"
	"poolc.dev/poolc/pools"
)

// The world is kept the way the state store keeps the state: every change
// is appended to a journal beside the world file (the world file's name
// plus ".journal"), and now and then the whole world is written as one
// compact snapshot (temporary file, fsync, rename), after which the
// journal starts over. Reading the world is reading the snapshot and
// replaying the journal's changes it does not hold.
//
//   - A step's Apply returns only once its changes are written to the
//     journal (to the OS, at least), so a SIGKILL of the plugin loses no
//     change of a step it reported; a change of a step it had not
//     reported yet may be lost, and poolc's refresh sees that step's
//     effect missing and plans it again.
//   - One write covers every change recorded while the previous write
//     ran: Applies in flight together share a journal write.
//   - A snapshot is written when the journal holds at least as many
//     bytes as the last snapshot (and at least minJournalBytes), at most
//     once a snapshotInterval, so the bytes written grow with the changes
//     made, not with the changes times the world's size; the first write
//     to a world that has no file yet is a snapshot, so the file exists.
//   - A journal line carries its change's sequence number and a snapshot
//     the number of the last change it holds, so a kill between writing
//     a snapshot and emptying the journal replays nothing twice; a torn
//     last line (a write cut short by the kill) is a change never
//     reported, and is dropped.

const (
	// snapshotInterval is the least time between two snapshots.
	snapshotInterval = time.Second
	// minJournalBytes is the least journal a snapshot replaces.
	minJournalBytes = 256 << 10
)

// change is one change to the world, as the journal records it; exactly
// one of its fields but Seq is set.
type change struct {
	Seq uint64 `json:"seq"`
	// Attempt is the ID of a step an attempt of which began.
	Attempt string `json:"attempt,omitempty"`
	// Effect is a step that took effect, after Seconds simulated seconds.
	Effect  *pools.Step `json:"effect,omitempty"`
	Seconds float64     `json:"seconds,omitempty"`
	// Violation and Interruption are what the sim saw and recorded.
	Violation    string `json:"violation,omitempty"`
	Interruption string `json:"interruption,omitempty"`
}

// apply makes the change in the world: the one place a change is made,
// whether live or replayed from the journal.
func (w *World) apply(c change) error {
	switch {
	case c.Attempt != "":
		w.Attempts[c.Attempt]++
	case c.Effect != nil:
		if err := detailed(*c.Effect); err != nil {
			return err
		}
		if err := w.Fleet.Apply(*c.Effect); err != nil {
			return err
		}
		if c.Effect.Kind == pools.StepStart {
			w.Starts[c.Effect.Lane.Name+"@"+c.Effect.Lane.Node]++
		}
		w.ClockSeconds += c.Seconds
	case c.Violation != "":
		w.Violations = append(w.Violations, c.Violation)
	case c.Interruption != "":
		w.Interruptions = append(w.Interruptions, c.Interruption)
	}
	return nil
}

// detailed checks that a step carries the detail its kind needs, as a
// step read back from a journal may not.
func detailed(s pools.Step) error {
	var ok bool
	switch s.Kind {
	case pools.StepPrefetch:
		ok = s.Prefetch != nil
	case pools.StepStart, pools.StepResidency, pools.StepDrain, pools.StepStop:
		ok = s.Lane != nil
	case pools.StepRoute:
		ok = s.Route != nil
	case pools.StepMemberEnsure, pools.StepImageSync, pools.StepMemberRemove:
		ok = s.Member != nil
	default:
		return fmt.Errorf("step %s: unknown step kind %q", s.ID, s.Kind)
	}
	if !ok {
		return fmt.Errorf("step %s: a %s step without its detail", s.ID, s.Kind)
	}
	return nil
}

// snapshot is the world file: the world and the last change it holds.
type snapshot struct {
	World
	Seq uint64 `json:"journal_seq,omitempty"`
}

// worldLog writes a world's changes to its files. Its fields up to io are
// guarded by the Sim's mutex; the rest by io, which one writer holds at a
// time.
type worldLog struct {
	path string // the world file; "" keeps the world in memory only

	seq     uint64 // the last change recorded
	pending []byte // journal lines of changes not yet written

	io           sync.Mutex
	written      uint64 // the last change written
	journal      *os.File
	journalBytes int
	snapBytes    int // the size of the last snapshot, 0 when there is none
	lastSnap     time.Time
	snapshots    int // how many snapshots this log wrote
	spare        []byte
}

func journalPath(world string) string { return world + ".journal" }

// loadWorld reads the world kept at path (nothing at "": a new world),
// and returns it with the log that goes on writing it.
func loadWorld(path string) (World, *worldLog, error) {
	snap := snapshot{World: World{Starts: map[string]int{}, Attempts: map[string]int{}}}
	l := &worldLog{path: path, lastSnap: time.Now()}
	if path != "" {
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return snap.World, nil, err
		default:
			if err := json.Unmarshal(data, &snap); err != nil {
				return snap.World, nil, fmt.Errorf("sim world %s: %v", path, err)
			}
			l.snapBytes = len(data)
		}
	}
	w := &snap.World
	if w.Starts == nil {
		w.Starts = map[string]int{}
	}
	if w.Attempts == nil {
		w.Attempts = map[string]int{}
	}
	w.Fleet.Normalize()
	l.seq = snap.Seq
	if path != "" {
		n, err := l.replay(w)
		if err != nil {
			return *w, nil, err
		}
		l.journalBytes = n
	}
	l.written = l.seq
	return *w, l, nil
}

// replay makes the journal's changes the snapshot does not hold, and
// returns the size of the journal's whole lines.
func (l *worldLog) replay(w *World) (int, error) {
	data, err := os.ReadFile(journalPath(l.path))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	// What follows the last newline is empty, or the torn tail of a
	// killed write: a change never reported.
	whole := bytes.LastIndexByte(data, '\n') + 1
	for i, line := range bytes.Split(data[:whole], []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var c change
		if err := json.Unmarshal(line, &c); err != nil {
			return 0, fmt.Errorf("sim world journal %s:%d: %v", journalPath(l.path), i+1, err)
		}
		if c.Seq <= l.seq {
			continue // the snapshot holds it
		}
		if err := w.apply(c); err != nil {
			return 0, fmt.Errorf("sim world journal %s:%d: %v", journalPath(l.path), i+1, err)
		}
		l.seq = c.Seq
	}
	return whole, nil
}

// ReadWorld reads a world file and its journal, for tests and tools that
// inspect a run.
func ReadWorld(path string) (World, error) {
	w, _, err := loadWorld(path)
	return w, err
}

// WriteWorld replaces the world kept at path with w, its journal
// included, for tests and tools that change a world by hand (a lane that
// died, say) while no sim runs on it.
func WriteWorld(path string, w World) error {
	data, err := json.Marshal(snapshot{World: w})
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return err
	}
	if err := os.Remove(journalPath(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// record makes a change in the world and queues it for the journal; the
// caller holds s.mu, and calls s.commit once it has released it.
func (s *Sim) record(c change) error {
	if err := s.world.apply(c); err != nil {
		return err
	}
	l := s.log
	if l == nil {
		return nil // not configured: nothing to write to
	}
	l.seq++
	if l.path == "" {
		return nil
	}
	c.Seq = l.seq
	line, err := json.Marshal(c)
	if err != nil {
		return err
	}
	l.pending = append(append(l.pending, line...), '\n')
	return nil
}

// commit returns once every change recorded so far is written. The
// caller does not hold s.mu. The first caller to find changes unwritten
// writes all of them, those recorded by other Applies included, in one
// write (or one snapshot); the others find their changes written when it
// is done.
func (s *Sim) commit() error {
	s.mu.Lock()
	l := s.log
	if l == nil || l.path == "" {
		s.mu.Unlock()
		return nil
	}
	want := l.seq
	s.mu.Unlock()
	l.io.Lock()
	defer l.io.Unlock()
	if l.written >= want {
		return nil
	}
	s.mu.Lock()
	lines, upto := l.pending, l.seq
	l.pending = l.spare[:0]
	var snap []byte
	var err error
	if l.snapshotDue(len(lines)) {
		snap, err = json.Marshal(snapshot{World: s.world, Seq: upto})
	}
	s.mu.Unlock()
	if err == nil && snap != nil {
		if err = l.writeSnapshot(snap); err == nil {
			l.written, l.spare = upto, lines
			return nil
		}
	}
	if err == nil {
		err = l.append(lines)
	}
	if err != nil {
		// Keep the lines for the next commit, ahead of those recorded
		// meanwhile.
		s.mu.Lock()
		l.pending = append(lines, l.pending...)
		s.mu.Unlock()
		return err
	}
	l.written, l.spare = upto, lines
	return nil
}

// snapshotDue says whether the next write is a snapshot; the caller holds
// l.io.
func (l *worldLog) snapshotDue(pending int) bool {
	if l.snapBytes == 0 {
		return true
	}
	journal := l.journalBytes + pending
	return journal >= max(l.snapBytes, minJournalBytes) && time.Since(l.lastSnap) >= snapshotInterval
}

// writeSnapshot replaces the world file with data, then empties the
// journal; the caller holds l.io. A journal that cannot be emptied holds
// only changes the snapshot holds too, which a read skips by their
// numbers, so that is no error.
func (l *worldLog) writeSnapshot(data []byte) error {
	if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(l.path, data, 0o644); err != nil {
		return err
	}
	l.snapBytes, l.lastSnap = len(data), time.Now()
	l.snapshots++
	if l.journalBytes == 0 {
		return nil
	}
	var err error
	if l.journal != nil {
		err = l.journal.Truncate(0)
	} else {
		err = os.Truncate(journalPath(l.path), 0)
	}
	if err == nil {
		l.journalBytes = 0
	}
	return nil
}

// append writes journal lines with one write call; the caller holds l.io.
// A write that fails is cut off, so the journal keeps whole lines only.
func (l *worldLog) append(lines []byte) error {
	if l.journal == nil {
		if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
			return err
		}
		fh, err := os.OpenFile(journalPath(l.path), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		// Drop a torn tail that loading skipped.
		if err := fh.Truncate(int64(l.journalBytes)); err != nil {
			fh.Close()
			return err
		}
		l.journal = fh
	}
	if _, err := l.journal.Write(lines); err != nil {
		l.journal.Truncate(int64(l.journalBytes))
		return err
	}
	l.journalBytes += len(lines)
	return nil
}

// close closes the journal file.
func (l *worldLog) close() {
	if l == nil {
		return
	}
	l.io.Lock()
	defer l.io.Unlock()
	if l.journal != nil {
		l.journal.Close()
		l.journal = nil
	}
}
