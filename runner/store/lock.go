package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"syscall"
	"time"
)

// LockInfo says who holds a state lock, for what, since when.
type LockInfo struct {
	ID        string    `json:"id"`
	Who       string    `json:"who"`
	Operation string    `json:"operation"`
	Created   time.Time `json:"created"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	Version   string    `json:"version"`
}

// String is the lock info as a sentence.
func (i LockInfo) String() string {
	return fmt.Sprintf("ID %s, held by %s (pid %d on %s) for %s since %s", i.ID, i.Who, i.PID, i.Host, i.Operation, i.Created.Format(time.RFC3339))
}

// LockedError is returned when another process holds the lock.
type LockedError struct {
	Path string
	Info LockInfo
}

// Error says who holds the lock and how to break it.
func (e *LockedError) Error() string {
	return fmt.Sprintf("state %s is locked: %s; if that process is gone, run: poolc force-unlock %s", e.Path, e.Info, e.Info.ID)
}

// Lock is a held state lock.
type Lock struct {
	f    *File
	Info LockInfo
}

// NewLockInfo describes this process taking a lock for an operation.
func NewLockInfo(operation, version string) LockInfo {
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	host, _ := os.Hostname()
	return LockInfo{ID: NewID(), Who: who + "@" + host, Operation: operation, Created: time.Now().UTC(), Host: host, PID: os.Getpid(), Version: version}
}

// Lock takes the state lock, retrying until ctx is done. A lock left by a
// process of this host that no longer exists is stale and taken over;
// stale is told about it.
func (f *File) Lock(ctx context.Context, info LockInfo, stale func(LockInfo)) (*Lock, error) {
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return nil, err
	}
	wait := 50 * time.Millisecond
	for {
		err := createExclusive(f.LockPath(), data)
		if err == nil {
			return &Lock{f: f, Info: info}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("taking the state lock: %w", err)
		}
		held, rerr := f.LockInfo()
		if rerr == nil && isStale(held) {
			if os.Remove(f.LockPath()) == nil && stale != nil {
				stale(held)
			}
			continue
		}
		locked := &LockedError{Path: f.Path, Info: held}
		select {
		case <-ctx.Done():
			return nil, locked
		case <-time.After(wait):
			wait = min(2*wait, time.Second)
		}
	}
}

func createExclusive(path string, data []byte) error {
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, werr := fh.Write(append(data, '\n'))
	serr := fh.Sync()
	cerr := fh.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// isStale reports whether a lock was left by a process of this host that
// is gone.
func isStale(info LockInfo) bool {
	host, _ := os.Hostname()
	if info.Host != host || info.PID <= 0 || info.PID == os.Getpid() {
		return false
	}
	err := syscall.Kill(info.PID, 0)
	return errors.Is(err, syscall.ESRCH)
}

// LockInfo reads who holds the lock.
func (f *File) LockInfo() (LockInfo, error) {
	var info LockInfo
	data, err := os.ReadFile(f.LockPath())
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return info, fmt.Errorf("%s: %w", f.LockPath(), err)
	}
	return info, nil
}

// Unlock releases the lock, if it is still this lock.
func (l *Lock) Unlock() error {
	held, err := l.f.LockInfo()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if held.ID != l.Info.ID {
		return fmt.Errorf("state lock was taken over by %s", held)
	}
	return os.Remove(l.f.LockPath())
}

// ForceUnlock removes the lock when its ID is id: for a lock left by a
// process that is gone, on a machine poolc cannot check.
func (f *File) ForceUnlock(id string) error {
	held, err := f.LockInfo()
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("state %s is not locked", f.Path)
	}
	if err != nil {
		return err
	}
	if held.ID != id {
		return fmt.Errorf("lock ID %s does not match the lock held: %s", id, held)
	}
	return os.Remove(f.LockPath())
}
