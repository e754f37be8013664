package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
)

// Appender appends JSON lines to a file by group commit: the caller that
// finds no write under way writes every line queued so far with one write
// call, and the lines queued meanwhile wait for the next one. Under
// parallel writers that is one system call for several lines, in the
// order they were queued. A line is written to the OS (not synced) when
// its wait returns, so a killed process leaves whole lines and loses none
// it reported written. Once a write failed, it and every later line fail.
type Appender struct {
	fh *os.File

	mu      sync.Mutex
	flushed *sync.Cond // a write ended
	pending []byte     // queued lines not yet written
	spare   []byte     // the buffer of the last write, reused
	size    int64      // bytes in the file and queued
	queued  uint64     // lines queued so far
	written uint64     // lines whose write has ended
	writing bool       // a caller is writing a batch
	failed  uint64     // the first line of the batch that failed; 0 none
	err     error      // why it failed
}

// Create replaces the file at path with an empty one to append to. The
// old file is removed first, not cut short, so a process still writing it
// (an apply whose lock was forced away) writes to its own.
func Create(path string) (*Appender, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("replacing the journal: %w", err)
	}
	return Open(path)
}

// Open opens the file at path to append to, creating it if need be. What
// a killed writer left after the last whole line is cut off: no line, and
// it would make the next one unreadable.
func Open(path string) (*Appender, error) {
	fh, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o666)
	if err != nil {
		return nil, fmt.Errorf("opening the journal: %w", err)
	}
	data, err := io.ReadAll(fh)
	if err == nil {
		if end := bytes.LastIndexByte(data, '\n') + 1; end < len(data) {
			err = fh.Truncate(int64(end))
			data = data[:end]
		}
	}
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("opening the journal: %w", err)
	}
	a := &Appender{fh: fh, size: int64(len(data))}
	a.flushed = sync.NewCond(&a.mu)
	return a, nil
}

// Queue queues v's JSON as the next line; the wait it returns returns
// once the line is written, with the error that kept it from being
// written. Queue never blocks on the disk, so a caller may queue under a
// lock that orders its lines and wait after releasing it.
func (a *Appender) Queue(v any) (wait func() error) {
	line, err := json.Marshal(v)
	if err != nil {
		return func() error { return err }
	}
	return a.queueLine(line)
}

// queueLine queues line (without its newline) as Queue does.
func (a *Appender) queueLine(line []byte) (wait func() error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		err := a.err
		return func() error { return err }
	}
	a.pending = append(append(a.pending, line...), '\n')
	a.size += int64(len(line)) + 1
	a.queued++
	seq := a.queued
	return func() error { return a.wait(seq) }
}

// Flush returns once every line queued so far is written.
func (a *Appender) Flush() error {
	a.mu.Lock()
	seq := a.queued
	a.mu.Unlock()
	return a.wait(seq)
}

// wait returns once line seq is written, writing the queued lines itself
// when no other caller is.
func (a *Appender) wait(seq uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.written < seq {
		if a.writing {
			a.flushed.Wait()
			continue
		}
		batch, first, last := a.pending, a.written+1, a.queued
		a.pending, a.writing = a.spare[:0], true
		a.mu.Unlock()
		_, err := a.fh.Write(batch)
		a.mu.Lock()
		a.spare, a.writing, a.written = batch, false, last
		if err != nil && a.err == nil {
			a.failed, a.err = first, fmt.Errorf("writing the journal: %w", err)
		}
		a.flushed.Broadcast()
	}
	if a.err != nil && seq >= a.failed {
		return a.err
	}
	return nil
}

// Size is how many bytes the file holds with the lines queued.
func (a *Appender) Size() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.size
}

// Reset empties the file and drops the lines queued, whose waits then
// return as written: the caller has stored what they hold elsewhere (a
// snapshot). A file that cannot be emptied keeps its lines, and the lines
// queued after are appended to them.
func (a *Appender) Reset() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.writing {
		a.flushed.Wait()
	}
	if a.err != nil {
		return a.err
	}
	a.size -= int64(len(a.pending))
	a.pending, a.written = a.pending[:0], a.queued
	a.flushed.Broadcast()
	if err := a.fh.Truncate(0); err != nil {
		return fmt.Errorf("emptying the journal: %w", err)
	}
	a.size = 0
	return nil
}

// Sync flushes the lines written to the disk.
func (a *Appender) Sync() error { return a.fh.Sync() }

// Close writes the lines queued and closes the file.
func (a *Appender) Close() error { return errors.Join(a.Flush(), a.fh.Close()) }

// Lines calls fn with each whole line of the file at path (its number
// from 1, and its bytes without the newline), in order; what follows the
// last newline is the torn tail of a killed write, no line. A file that
// does not exist has no lines. It returns how many bytes the whole lines
// take.
func Lines(path string, fn func(n int, line []byte) error) (int64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	whole := bytes.LastIndexByte(data, '\n') + 1
	n := 0
	for rest := data[:whole]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		n++
		if err := fn(n, rest[:i]); err != nil {
			return 0, err
		}
		rest = rest[i+1:]
	}
	return int64(whole), nil
}
