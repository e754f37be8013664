package store

import (
	"context"
	"fmt"

	"poolc.dev/poolc/journal"
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
	// Read returns the state with the effects of the steps the last
	// apply journaled as finished after its last snapshot, or an empty
	// state (serial 0, no lineage) when there is none yet.
	Read() (*pools.State, error)
	// Write stores st after giving it a lineage if it has none and
	// incrementing its serial.
	Write(st *pools.State) error
	// Acquire takes the state lock, waiting until ctx is done; it fails
	// with a *LockedError naming the holder. stale is told about a lock
	// left by a process that is gone, when the backend takes one over.
	// Once held, what a killed holder left is settled, so that a new
	// journal can replace the old one without losing a finished step.
	Acquire(ctx context.Context, info LockInfo, stale func(LockInfo)) (Unlocker, error)
	// LockInfo says who holds the lock; its error matches fs.ErrNotExist
	// when nobody does.
	LockInfo() (LockInfo, error)
	// ForceUnlock breaks the lock whose ID is id.
	ForceUnlock(id string) error
	// BeginJournal starts the journal of a new apply, replacing the
	// previous apply's records. The caller holds the lock.
	BeginJournal(apply string) (journal.Writer, error)
	// LastApply reports the last apply if it was interrupted, or nil.
	LastApply() (*journal.Interrupted, error)
	// Close releases the backend's connections; a held lock is released
	// by its Unlocker, not by Close.
	Close() error
	// String names the backend and where it keeps the state, for messages.
	String() string
}

// Unlocker is a held state lock.
type Unlocker interface {
	// Unlock releases the lock, if it is still this one. Unlocking twice
	// does nothing.
	Unlock() error
}

var (
	_ Backend  = (*File)(nil)
	_ Unlocker = (*Lock)(nil)
)

// ReadPool is Read for the state of a given pool: a state that belongs to
// another pool is refused, naming both.
func ReadPool(b Backend, pool string) (*pools.State, error) {
	st, err := b.Read()
	if err != nil {
		return nil, err
	}
	if st.Pool != "" && st.Pool != pool {
		return nil, fmt.Errorf("state %s is the state of pool %q, not of pool %q that the configuration declares; point --state at pool %s's state", b, st.Pool, pool, pool)
	}
	return st, nil
}

// Acquire is Lock behind the Backend interface.
func (f *File) Acquire(ctx context.Context, info LockInfo, stale func(LockInfo)) (Unlocker, error) {
	l, err := f.Lock(ctx, info, stale)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Close does nothing: a file store holds no connection.
func (f *File) Close() error { return nil }

// String is the state file's path.
func (f *File) String() string { return f.Path }
