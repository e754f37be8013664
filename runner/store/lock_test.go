package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary serve as the helper process of the
// two-process lock race.
func TestMain(m *testing.M) {
	if state := os.Getenv("POOLC_LOCK_HELPER"); state != "" {
		os.Exit(lockHelper(state))
	}
	os.Exit(m.Run())
}

// The helper's exit codes.
const (
	helperHeld   = 0
	helperLocked = 3
	helperBoth   = 4
	helperError  = 5
)

// lockHelper waits on its stdin, then tries the lock once. Holding it, it
// creates a marker file that only one holder at a time may create.
func lockHelper(state string) int {
	io.ReadAll(os.Stdin) // the start line: both helpers are released at once
	f := Open(state)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one try, no waiting
	l, err := f.Lock(ctx, NewLockInfo("race", "test"), nil)
	var locked *LockedError
	if errors.As(err, &locked) {
		return helperLocked
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return helperError
	}
	marker, err := os.OpenFile(state+".holder", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "another process holds the lock too:", err)
		return helperBoth
	}
	marker.Close()
	time.Sleep(2 * time.Millisecond)
	os.Remove(state + ".holder")
	if err := l.Unlock(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return helperError
	}
	return helperHeld
}

// staleLock leaves the lock file a process killed while holding the lock
// leaves: its info (trial%3 == 0), an empty file (killed between creating
// and writing it) or a torn one.
func staleLock(t *testing.T, f *File, trial int) {
	t.Helper()
	var data []byte
	switch trial % 3 {
	case 0:
		info := NewLockInfo("apply", "test")
		info.PID = 1 << 22 // beyond pid_max: no such process
		data, _ = json.Marshal(info)
	case 2:
		data = []byte(`{"id": "3f2a`)
	}
	if err := os.WriteFile(f.LockPath(), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Two processes released at the same instant race for a lock left stale
// by a killed holder, hundreds of times: never do both hold it.
func TestTwoProcessesNeverBothHoldTheLock(t *testing.T) {
	trials := 300
	if testing.Short() {
		trials = 50
	}
	dir := t.TempDir()
	outcomes := map[int]int{}
	for trial := range trials {
		f := Open(filepath.Join(dir, fmt.Sprintf("s%d.json", trial)))
		staleLock(t, f, trial)
		var cmds []*exec.Cmd
		var starts []io.WriteCloser
		var stderr [2]strings.Builder
		for i := range 2 {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "POOLC_LOCK_HELPER="+f.Path)
			cmd.Stderr = &stderr[i]
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds, starts = append(cmds, cmd), append(starts, in)
		}
		time.Sleep(5 * time.Millisecond) // both are waiting on their stdin
		for _, in := range starts {
			in.Close()
		}
		held := 0
		for i, cmd := range cmds {
			code := 0
			if err := cmd.Wait(); err != nil {
				var exit *exec.ExitError
				if !errors.As(err, &exit) {
					t.Fatal(err)
				}
				code = exit.ExitCode()
			}
			switch code {
			case helperHeld:
				held++
			case helperLocked:
			case helperBoth:
				t.Fatalf("trial %d: both processes held the lock: %s", trial, stderr[i].String())
			default:
				t.Fatalf("trial %d: helper exited %d: %s", trial, code, stderr[i].String())
			}
			outcomes[code]++
		}
		if held == 0 {
			t.Fatalf("trial %d: neither process took the stale lock", trial)
		}
	}
	t.Logf("%d trials: %d holds, %d refused as locked", trials, outcomes[helperHeld], outcomes[helperLocked])
	if outcomes[helperLocked] == 0 {
		t.Errorf("no trial saw the other process holding the lock: the processes did not race")
	}
}

// Goroutines of one process race the same way, each with its own open
// file, as two applies of one CI runner would.
func TestConcurrentLockersNeverBothHoldTheLock(t *testing.T) {
	for trial := range 100 {
		f := Open(filepath.Join(t.TempDir(), "s.json"))
		staleLock(t, f, trial)
		var mu sync.Mutex
		holders, most := 0, 0
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 4 {
			wg.Go(func() {
				<-start
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				l, err := f.Lock(ctx, NewLockInfo("race", "test"), nil)
				if err != nil {
					return
				}
				mu.Lock()
				holders++
				most = max(most, holders)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				holders--
				mu.Unlock()
				l.Unlock()
			})
		}
		close(start)
		wg.Wait()
		if most != 1 {
			t.Fatalf("trial %d: %d goroutines held the lock at once", trial, most)
		}
	}
}

// An empty or torn lock file, left by a kill between creating it and
// writing it, is stale: the next lock takes it over, and force-unlock
// clears it.
func TestAnEmptyOrTornLockFileIsStale(t *testing.T) {
	for _, content := range []string{"", `{"id": "3f2a`, "garbage"} {
		f := Open(filepath.Join(t.TempDir(), "s.json"))
		os.WriteFile(f.LockPath(), []byte(content), 0o644)
		if _, err := f.LockInfo(); err == nil {
			t.Fatalf("%q: read as lock info", content)
		}
		if err := f.ForceUnlock("whatever"); err != nil {
			t.Fatalf("force-unlock of %q: %v", content, err)
		}
		if _, err := os.Stat(f.LockPath()); !os.IsNotExist(err) {
			t.Fatalf("%q: lock file still there", content)
		}

		os.WriteFile(f.LockPath(), []byte(content), 0o644)
		told := false
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		l, err := f.Lock(ctx, NewLockInfo("apply", "test"), func(LockInfo) { told = true })
		cancel()
		if err != nil {
			t.Fatalf("lock over %q: %v", content, err)
		}
		if content != "" && !told {
			t.Errorf("%q: not told about the stale lock", content)
		}
		if info, err := f.LockInfo(); err != nil || info.ID != l.Info.ID {
			t.Fatalf("%q: lock info after taking it: %+v %v", content, info, err)
		}
		l.Unlock()
	}
}

// A lock held by a live process is not stale, whatever its file says.
func TestALiveLockIsNeverStale(t *testing.T) {
	f := Open(filepath.Join(t.TempDir(), "s.json"))
	l, err := f.Lock(context.Background(), NewLockInfo("apply", "test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	os.WriteFile(f.LockPath(), nil, 0o644) // as if its info were not written yet
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var locked *LockedError
	if _, err := f.Lock(ctx, NewLockInfo("apply", "test"), nil); !errors.As(err, &locked) || !strings.Contains(err.Error(), "not written its lock info yet") {
		t.Fatalf("second lock: %v", err)
	}
	if err := f.ForceUnlock("whatever"); err == nil || !strings.Contains(err.Error(), "running process") {
		t.Fatalf("force-unlock of a live lock without readable info: %v", err)
	}
}

// The lock file respects the umask, as the state and journal do.
func TestTheStoresFilesRespectTheUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	f := Open(filepath.Join(t.TempDir(), "s.json"))
	l, err := f.Lock(context.Background(), NewLockInfo("apply", "test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	st, _ := f.Read()
	st.Pool = "lab"
	if err := f.Write(st); err != nil {
		t.Fatal(err)
	}
	j, err := f.BeginJournal("a1")
	if err != nil {
		t.Fatal(err)
	}
	j.End("done")
	for _, p := range []string{f.Path, f.JournalPath(), f.LockPath()} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600 under umask 077", filepath.Base(p), fi.Mode().Perm(), err)
		}
	}
}
