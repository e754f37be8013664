package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"sync"
	"syscall"
	"time"
)

// LockInfo says who holds a state lock, for what, since when. It is
// written into the lock file for display and for force-unlock; whether the
// lock is held is decided by the OS lock on that file, never by this info.
type LockInfo struct {
	ID        string    `json:"id"`
	Who       string    `json:"who"`
	Operation string    `json:"operation"`
	Created   time.Time `json:"created"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	Version   string    `json:"version"`
}

// String is the lock info as a sentence; info that could not be read
// (an empty or torn lock file) says so.
func (i LockInfo) String() string {
	if i.ID == "" {
		return "no readable lock info (an empty or torn lock file)"
	}
	return fmt.Sprintf("ID %s, held by %s (pid %d on %s) for %s since %s", i.ID, i.Who, i.PID, i.Host, i.Operation, i.Created.Format(time.RFC3339))
}

// LockedError is returned when another process holds the lock.
type LockedError struct {
	Path string
	Info LockInfo
}

// Error says who holds the lock and how to break it.
func (e *LockedError) Error() string {
	if e.Info.ID == "" {
		return fmt.Sprintf("state %s is locked by a running process that has not written its lock info yet; try again", e.Path)
	}
	return fmt.Sprintf("state %s is locked: %s; if that process is gone, run: poolc force-unlock %s", e.Path, e.Info, e.Info.ID)
}

// Lock is a held state lock: an OS advisory lock (flock) on the open lock
// file, so it dies with the process that holds it, whatever kills it.
type Lock struct {
	f    *File
	Info LockInfo

	mu sync.Mutex
	fh *os.File // nil once released
}

// held is every lock this process holds, for Exit.
var held = struct {
	sync.Mutex
	locks map[Unlocker]bool
}{locks: map[Unlocker]bool{}}

// Track adds a lock of another backend to those Exit releases; untrack
// removes it, for its Unlock to call.
func Track(u Unlocker) (untrack func()) {
	held.Lock()
	held.locks[u] = true
	held.Unlock()
	return func() {
		held.Lock()
		delete(held.locks, u)
		held.Unlock()
	}
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

// errMoved says the lock file was removed or replaced between opening it
// and locking it: the lock taken is on a file nobody else will open.
var errMoved = errors.New("lock file replaced while locking it")

// Lock takes the state lock, retrying until ctx is done. A lock file left
// by a process that is gone (killed, or killed while writing its info, so
// that the file is empty or torn) is not locked by the OS any more: it is
// taken over, and stale is told what it said. Once held, the lock settles
// what a killed holder left: its temporary files are removed and the steps
// its journal says finished after its last snapshot are written to the
// state (see Read).
func (f *File) Lock(ctx context.Context, info LockInfo, stale func(LockInfo)) (*Lock, error) {
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return nil, err
	}
	data = append(data, '\n')
	wait := 50 * time.Millisecond
	for {
		l, err := f.tryLock(info, data, stale)
		if errors.Is(err, errMoved) {
			continue
		}
		var locked *LockedError
		if !errors.As(err, &locked) {
			if err != nil {
				return nil, fmt.Errorf("taking the state lock: %w", err)
			}
			if err := f.settle(); err != nil {
				l.Unlock()
				return nil, err
			}
			return l, nil
		}
		select {
		case <-ctx.Done():
			return nil, locked
		case <-time.After(wait):
			wait = min(2*wait, time.Second)
		}
	}
}

func (f *File) tryLock(info LockInfo, data []byte, stale func(LockInfo)) (*Lock, error) {
	fh, err := os.OpenFile(f.LockPath(), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		fh.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			held, _ := f.LockInfo()
			return nil, &LockedError{Path: f.Path, Info: held}
		}
		return nil, err
	}
	if !sameFile(fh, f.LockPath()) {
		fh.Close()
		return nil, errMoved
	}
	if prev, err := io.ReadAll(fh); err == nil && len(prev) > 0 && stale != nil {
		var was LockInfo
		json.Unmarshal(prev, &was)
		stale(was)
	}
	if err := writeInfo(fh, data); err != nil {
		fh.Close()
		return nil, err
	}
	l := &Lock{f: f, Info: info, fh: fh}
	held.Lock()
	held.locks[l] = true
	held.Unlock()
	return l, nil
}

// writeInfo replaces the lock file's content with data.
func writeInfo(fh *os.File, data []byte) error {
	if _, err := fh.WriteAt(data, 0); err != nil {
		return err
	}
	if err := fh.Truncate(int64(len(data))); err != nil {
		return err
	}
	return fh.Sync()
}

// sameFile reports whether the open file is the one at path now.
func sameFile(fh *os.File, path string) bool {
	a, err := fh.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// LockInfo reads who holds the lock. A lock file that is empty or torn
// gives an error and the zero LockInfo.
func (f *File) LockInfo() (LockInfo, error) {
	var info LockInfo
	data, err := os.ReadFile(f.LockPath())
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(data, &info); err != nil || info.ID == "" {
		if len(data) == 0 {
			return LockInfo{}, fmt.Errorf("%s is empty", f.LockPath())
		}
		return LockInfo{}, fmt.Errorf("%s holds no lock info: %v", f.LockPath(), err)
	}
	return info, nil
}

// Unlock releases the lock and removes the lock file, unless the file was
// removed by force-unlock (and perhaps locked again by another process)
// meanwhile. Unlocking twice does nothing.
func (l *Lock) Unlock() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fh == nil {
		return nil
	}
	held.Lock()
	delete(held.locks, l)
	held.Unlock()
	var err error
	if sameFile(l.fh, l.f.LockPath()) {
		err = os.Remove(l.f.LockPath())
	} else {
		err = fmt.Errorf("state lock %s was broken by force-unlock while held", l.Info.ID)
	}
	err = errors.Join(err, l.fh.Close())
	l.fh = nil
	return err
}

// Exit releases every state lock this process holds, then exits with
// code: for a command that must stop at once (a second Ctrl-C), so that
// it leaves no lock file behind. (The OS lock would die with the process
// anyway; the file saying who held it would not.)
func Exit(code int) {
	held.Lock()
	locks := make([]Unlocker, 0, len(held.locks))
	for l := range held.locks {
		locks = append(locks, l)
	}
	held.Unlock()
	for _, l := range locks {
		l.Unlock()
	}
	os.Exit(code)
}

// ForceUnlock removes the lock when its ID is id: for a lock whose holder
// is gone on a machine poolc cannot check, or hangs. A lock file whose
// info is unreadable (empty or torn: its writer was killed while taking
// it) is removed whatever id says, provided no process holds it.
func (f *File) ForceUnlock(id string) error {
	fh, err := os.Open(f.LockPath())
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("state %s is not locked", f.Path)
	}
	if err != nil {
		return err
	}
	defer fh.Close()
	info, rerr := f.LockInfo()
	free := syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
	switch {
	case rerr != nil && !free:
		return fmt.Errorf("state %s is locked by a running process whose lock info is unreadable (%v); wait for it, or stop it", f.Path, rerr)
	case rerr == nil && info.ID != id:
		return fmt.Errorf("lock ID %s does not match the lock held: %s", id, info)
	}
	return os.Remove(f.LockPath())
}
