package store

import (
	"context"

	"poolc.dev/poolc/pools"
)

// Backend is where a pool's state, its lock and its journal live: the
// file beside the configuration (File), or a team store such as
// etcdstore.Store. Apply and plan use a Backend only through these calls,
// so they work the same whichever the pool's state block chooses.
//
// Write must never overwrite a state written by someone else since this
// Backend's last Read or Write: a backend that can detect it (etcd, by the
// revision) fails instead.
type Backend interface {
	// Read returns the state, or an empty state (serial 0, no lineage)
	// when there is none yet.
	Read() (*pools.State, error)
	// Write stores st after giving it a lineage if it has none and
	// incrementing its serial.
	Write(st *pools.State) error
	// Acquire takes the state lock, waiting until ctx is done; it fails
	// with a *LockedError naming the holder. stale is told about a lock
	// left by a process that is gone, when the backend takes one over.
	Acquire(ctx context.Context, info LockInfo, stale func(LockInfo)) (Unlocker, error)
	// LockInfo says who holds the lock; its error matches fs.ErrNotExist
	// when nobody does.
	LockInfo() (LockInfo, error)
	// ForceUnlock breaks the lock whose ID is id.
	ForceUnlock(id string) error
	// BeginJournal starts the journal of a new apply, replacing the
	// previous apply's records.
	BeginJournal(apply string) (JournalWriter, error)
	// LastApply reports the last apply if it was interrupted, or nil.
	LastApply() (*Interrupted, error)
	// Close releases the backend's connections; a held lock is released
	// by its Unlocker, not by Close.
	Close() error
	// String names the backend and where it keeps the state, for messages.
	String() string
}

// Unlocker is a held state lock.
type Unlocker interface {
	// Unlock releases the lock, if it is still this one.
	Unlock() error
}

// JournalWriter appends the records of one apply.
type JournalWriter interface {
	// Add appends a record.
	Add(ev JournalEvent, step, message string) error
	// End records the end of the apply.
	End(message string) error
}

var (
	_ Backend       = (*File)(nil)
	_ Unlocker      = (*Lock)(nil)
	_ JournalWriter = (*Journal)(nil)
)

// Acquire is Lock behind the Backend interface.
func (f *File) Acquire(ctx context.Context, info LockInfo, stale func(LockInfo)) (Unlocker, error) {
	l, err := f.Lock(ctx, info, stale)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// BeginJournal is StartJournal behind the Backend interface.
func (f *File) BeginJournal(apply string) (JournalWriter, error) {
	j, err := f.StartJournal(apply)
	if err != nil {
		return nil, err
	}
	return j, nil
}

// Close does nothing: a file store holds no connection.
func (f *File) Close() error { return nil }

// String is the state file's path.
func (f *File) String() string { return f.Path }

// Replay folds an apply's journal records, oldest first, into the last
// apply's outcome: nil when it ended, else its ID and the steps it had
// started and not finished, in the order they started.
func Replay(records []Record) *Interrupted {
	var r replay
	for _, rec := range records {
		r.add(rec)
	}
	return r.interrupted()
}

// replay follows journal records one at a time.
type replay struct {
	last  *Interrupted
	open  map[string]bool
	order []string
}

func (r *replay) add(rec Record) {
	switch rec.Event {
	case ApplyStarted:
		r.last, r.open, r.order = &Interrupted{Apply: rec.Apply}, map[string]bool{}, nil
	case ApplyEnded:
		r.last = nil
	case StepStarted:
		if r.open == nil {
			r.open = map[string]bool{}
		}
		if !r.open[rec.Step] {
			r.order = append(r.order, rec.Step)
		}
		r.open[rec.Step] = true
	default:
		delete(r.open, rec.Step)
	}
}

func (r *replay) interrupted() *Interrupted {
	if r.last == nil {
		return nil
	}
	for _, s := range r.order {
		if r.open[s] {
			r.last.InFlight = append(r.last.InFlight, s)
		}
	}
	return r.last
}
