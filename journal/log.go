package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"poolc.dev/poolc/internal/atomicfile"
)

// Beside is the path of the journal kept beside the snapshot file at
// path: a state file's, or a Log's.
func Beside(path string) string { return path + ".journal" }

// SnapshotInterval is the least time between two snapshots of a value
// kept beside its journal: a Log's, and by default the state's during an
// apply (runner.DefaultSnapshotInterval).
const SnapshotInterval = time.Second

// The snapshot policy of a Log: a snapshot is written when the journal
// holds at least as many bytes as the last snapshot (and at least
// minJournalBytes), at most once a SnapshotInterval, so the bytes written
// grow with the changes made, not with the changes times the value's
// size.
const minJournalBytes = 256 << 10

// Log keeps a value of type V changed by changes of type C the way the
// state store keeps a state: every change is appended to a journal (an
// Appender, so changes recorded together share a write) beside the
// snapshot file (Beside), and now and then the whole value is written as
// one compact snapshot (atomicfile), after which the journal starts over.
// Reading the value is reading the snapshot and replaying the journal's
// changes it does not hold. The sim actuator keeps its world in a Log.
//
//   - Commit returns only once the changes recorded before it are
//     written to the journal (to the OS, at least), so a SIGKILL loses
//     no change the caller reported; one recorded but not committed yet
//     may be lost.
//   - The first commit to a value that has no snapshot yet writes one,
//     so the file exists; later ones write one when it is due (see the
//     snapshot policy above).
//   - A journal line is C's JSON object with "seq", its number, as its
//     first member, and a snapshot is V's JSON object with
//     "journal_seq", the number of the last change it holds, as its last
//     (omitted when 0), so a kill between writing a snapshot and emptying
//     the journal replays nothing twice. A torn last line (a write cut
//     short by a kill) is a change never committed, and is dropped.
//
// A Log's methods but Commit are called under the lock that guards the
// value, which orders the changes as they are made.
type Log[V, C any] struct {
	path  string // the snapshot file; "" keeps the value in memory only
	apply func(*V, C) error

	seq       uint64    // the last change recorded
	journal   *Appender // opened at the first change recorded
	snapBytes int       // the size of the last snapshot, 0 when there is none
	lastSnap  time.Time // when it was written
	snapshots int       // how many snapshots this log wrote
}

// OpenLog reads the value kept at path into v: the snapshot, when there
// is one (v is left as it is when there is none), then ready(v), then the
// journal's changes the snapshot does not hold, each made with apply,
// the one place a change is made, whether live or replayed. It returns
// the Log that goes on keeping v; at path "" it writes nothing. A Log
// that recorded nothing holds no file open.
func OpenLog[V, C any](path string, v *V, ready func(*V), apply func(*V, C) error) (*Log[V, C], error) {
	l := &Log[V, C]{path: path, apply: apply, lastSnap: time.Now()}
	if path != "" {
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, err
		default:
			var seq struct {
				Seq uint64 `json:"journal_seq"`
			}
			if err := unmarshal(data, v, &seq); err != nil {
				return nil, fmt.Errorf("%s: %v", path, err)
			}
			l.seq, l.snapBytes = seq.Seq, len(data)
		}
	}
	ready(v)
	if path == "" {
		return l, nil
	}
	return l, l.replay(v)
}

// replay makes the journal's changes the snapshot does not hold.
func (l *Log[V, C]) replay(v *V) error {
	where := Beside(l.path)
	_, err := Lines(where, func(n int, line []byte) error {
		var seq struct {
			Seq uint64 `json:"seq"`
		}
		var c C
		if err := unmarshal(line, &c, &seq); err != nil {
			return fmt.Errorf("%s:%d: %v", where, n, err)
		}
		if seq.Seq <= l.seq {
			return nil // the snapshot holds it
		}
		if err := l.apply(v, c); err != nil {
			return fmt.Errorf("%s:%d: %v", where, n, err)
		}
		l.seq = seq.Seq
		return nil
	})
	return err
}

// unmarshal reads data into each of vs, stopping at the first error.
func unmarshal(data []byte, vs ...any) error {
	for _, v := range vs {
		if err := json.Unmarshal(data, v); err != nil {
			return err
		}
	}
	return nil
}

// Record makes c in v and queues it for the journal, to be written by
// the next Commit, whose wait reports a failure to write it.
func (l *Log[V, C]) Record(v *V, c C) error {
	if err := l.apply(v, c); err != nil {
		return err
	}
	l.seq++
	if l.path == "" {
		return nil
	}
	if err := l.open(); err != nil {
		return err
	}
	line, err := numbered(c, "seq", l.seq, true)
	if err != nil {
		return err
	}
	l.journal.queueLine(line)
	return nil
}

// open opens the journal, creating its directory if need be.
func (l *Log[V, C]) open() error {
	if l.journal != nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
		return err
	}
	j, err := Open(Beside(l.path))
	if err != nil {
		return err
	}
	l.journal = j
	return nil
}

// Commit returns once every change recorded so far is written. When a
// snapshot is due, it writes one instead, of the value value returns, and
// empties the journal. mu is the lock under which the changes are
// recorded: Commit takes it to decide and to write a snapshot, and waits
// for the journal without it, so that every change recorded while a
// journal write runs, by other callers included, is written by the next
// one.
func (l *Log[V, C]) Commit(mu sync.Locker, value func() *V) error {
	mu.Lock()
	j := l.journal
	if j == nil {
		mu.Unlock()
		return nil
	}
	if l.snapshotDue() {
		err := l.Snapshot(value())
		mu.Unlock()
		if err == nil {
			return nil
		}
		// The journal holds the changes still: write them.
		return j.Flush()
	}
	mu.Unlock()
	return j.Flush()
}

// snapshotDue says whether the next commit writes a snapshot.
func (l *Log[V, C]) snapshotDue() bool {
	if l.snapBytes == 0 {
		return true
	}
	return int(l.journal.Size()) >= max(l.snapBytes, minJournalBytes) && time.Since(l.lastSnap) >= SnapshotInterval
}

// Snapshot replaces the snapshot file with v, holding every change
// recorded, then empties the journal. A journal that cannot be emptied
// holds only changes the snapshot holds too, which a read skips by their
// numbers, so that is no error. A Log at path "" writes nothing.
func (l *Log[V, C]) Snapshot(v *V) error {
	if l.path == "" {
		return nil
	}
	if err := l.open(); err != nil {
		return err
	}
	data, err := numbered(v, "journal_seq", l.seq, false)
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

// numbered is v's JSON object with the member name set to n, as its
// first member or its last; with none when n is 0.
func numbered(v any, name string, n uint64, first bool) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(data) < 2 || data[0] != '{' {
		return nil, fmt.Errorf("journaling %T: its JSON is no object", v)
	}
	if n == 0 {
		return data, nil
	}
	member := strconv.AppendUint([]byte(`"`+name+`":`), n, 10)
	body := data[1 : len(data)-1]
	if first {
		out := append([]byte{'{'}, member...)
		if len(body) > 0 {
			out = append(out, ',')
		}
		return append(append(out, body...), '}'), nil
	}
	data = data[:len(data)-1]
	if len(body) > 0 {
		data = append(data, ',')
	}
	return append(append(data, member...), '}'), nil
}

// Close closes the journal file, once every change recorded is written.
func (l *Log[V, C]) Close() error {
	if l == nil || l.journal == nil {
		return nil
	}
	err := l.journal.Close()
	l.journal = nil
	return err
}
