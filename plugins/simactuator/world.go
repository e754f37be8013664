package simactuator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"poolc.dev/poolc/internal/atomicfile"
	"poolc.dev/poolc/journal"
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
//     ran: Applies in flight together share a journal write (the
//     journal is a journal.Appender, which writes by group commit).
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
		if err := w.byNode().Apply(*c.Effect); err != nil {
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

// worldLog writes a world's changes to its files: the journal, an
// Appender that writes the changes of Applies in flight together with
// one write (group commit), and now and then the snapshot. Its fields are
// guarded by the Sim's mutex.
type worldLog struct {
	path string // the world file; "" keeps the world in memory only

	seq       uint64            // the last change recorded
	journal   *journal.Appender // opened at the first change recorded
	snapBytes int               // the size of the last snapshot, 0 when there is none
	lastSnap  time.Time
	snapshots int // how many snapshots this log wrote
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
		err := l.replay(w)
		w.settle()
		if err != nil {
			return *w, nil, err
		}
	}
	return *w, l, nil
}

// replay makes the journal's changes the snapshot does not hold; a torn
// last line (a write cut short by a kill) is a change never reported.
func (l *worldLog) replay(w *World) error {
	where := journalPath(l.path)
	_, err := journal.Lines(where, func(n int, line []byte) error {
		var c change
		if err := json.Unmarshal(line, &c); err != nil {
			return fmt.Errorf("sim world journal %s:%d: %v", where, n, err)
		}
		if c.Seq <= l.seq {
			return nil // the snapshot holds it
		}
		if err := w.apply(c); err != nil {
			return fmt.Errorf("sim world journal %s:%d: %v", where, n, err)
		}
		l.seq = c.Seq
		return nil
	})
	return err
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
	if l.journal == nil {
		if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
			return err
		}
		j, err := journal.Open(journalPath(l.path))
		if err != nil {
			return err
		}
		l.journal = j
	}
	c.Seq = l.seq
	l.journal.Queue(c) // written by the next commit, whose wait reports a failure
	return nil
}

// commit returns once every change recorded so far is written. The
// caller does not hold s.mu. Every change recorded while a journal write
// runs is written by the next one, those recorded by other Applies
// included; when a snapshot is due, it is written instead, and the
// journal emptied.
func (s *Sim) commit() error {
	s.mu.Lock()
	l := s.log
	if l == nil || l.journal == nil {
		s.mu.Unlock()
		return nil
	}
	if l.snapshotDue() {
		s.world.settle()
		err := l.writeSnapshot(snapshot{World: s.world, Seq: l.seq})
		s.mu.Unlock()
		if err == nil {
			return nil
		}
		// The journal holds the changes still: write them.
		return l.journal.Flush()
	}
	s.mu.Unlock()
	return l.journal.Flush()
}

// snapshotDue says whether the next write is a snapshot.
func (l *worldLog) snapshotDue() bool {
	if l.snapBytes == 0 {
		return true
	}
	journal := int(l.journal.Size())
	return journal >= max(l.snapBytes, minJournalBytes) && time.Since(l.lastSnap) >= snapshotInterval
}

// writeSnapshot replaces the world file with snap, then empties the
// journal, whose changes it holds. A journal that cannot be emptied holds
// only changes the snapshot holds too, which a read skips by their
// numbers, so that is no error.
func (l *worldLog) writeSnapshot(snap snapshot) error {
	data, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(l.path, data, 0o644); err != nil {
		return err
	}
	l.snapBytes, l.lastSnap = len(data), time.Now()
	l.snapshots++
	l.journal.Reset()
	return nil
}

// close closes the journal file.
func (l *worldLog) close() {
	if l != nil && l.journal != nil {
		l.journal.Close()
		l.journal = nil
	}
}
