// Package lockrace races two real poolc applies for the file state's lock
// left stale by a dead holder, a hundred times: never do both run.
package lockrace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"poolc.dev/poolc/internal/testing/poolctest"
	"poolc.dev/poolc/runner/store"
)

// racePool is a pool whose bring-up takes a few tens of milliseconds in
// the sim, long enough for two applies started together to overlap.
const racePool = `pool "race" {
  node "a" {
    address   = "a.lan"
    memory_gb = 64
  }
  model "m" {
    path      = "/models/m.gguf"
    size_gb   = 8
    memory_gb = 16
  }
  lane "chat" {
    model     = "m"
    residency = "keep-warm"
    placement = ["a"]
    port      = 8080
  }
  alias "chat" {
    lane      = "chat"
    fallbacks = ["cloud"]
  }
  plugin "sim" {
    builtin = true
    config = {
      time_scale = 0.002
    }
  }
}
`

// leaveStaleLock writes the lock file a holder killed while holding the
// lock leaves: its info naming a process that is gone, an empty file
// (killed between creating and writing it) or a torn one.
func leaveStaleLock(t *testing.T, dir string, trial int) {
	t.Helper()
	var data []byte
	switch trial % 3 {
	case 0:
		info := store.NewLockInfo("apply", "test")
		info.PID = 1 << 22 // beyond pid_max: no such process
		data, _ = json.Marshal(info)
	case 2:
		data = []byte(`{"id": "3f2a`)
	}
	if err := os.WriteFile(filepath.Join(dir, "poolc.state.json.lock"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// raceOutcome counts what the applies of a trial did.
type raceOutcome struct {
	ran, refused, idle int
}

// racePair starts two applies at once, each with its arguments, and says
// what each did: carried out steps, was refused with the lock error, or
// found nothing to do.
func racePair(t *testing.T, bin string, args [2][]string) (raceOutcome, error) {
	var cmds [2]*exec.Cmd
	var outs, errs [2]bytes.Buffer
	for i := range cmds {
		cmds[i] = exec.Command(bin, append([]string{"apply", "--auto-approve", "--json"}, args[i]...)...)
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &errs[i]
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			return raceOutcome{}, err
		}
	}
	var o raceOutcome
	var failed error
	for i, c := range cmds {
		err := c.Wait()
		steps := bytes.Count(outs[i].Bytes(), []byte(`"event":"done"`))
		var exit *exec.ExitError
		switch {
		case err == nil && steps > 0:
			o.ran++
		case err == nil:
			o.idle++
		case errors.As(err, &exit) && exit.ExitCode() == 1 && strings.Contains(outs[i].String()+errs[i].String(), "is locked"):
			// --json reports the refusal as a diagnostics document on stdout.
			o.refused++
		default:
			failed = fmt.Errorf("apply %d: %v after %d steps\n%s%s", i, err, steps, outs[i].String(), errs[i].String())
		}
	}
	return o, failed
}

// Two `poolc apply` processes started together race for a lock left
// stale by a dead holder, 100 times: never do both carry out steps. Each
// run either carries out the bring-up, is refused with the lock error, or
// (when it took the lock after the other released it) finds nothing to
// do; the sim world shows the lane started once, with no violation.
func TestTwoAppliesRacingOnAStaleLockNeverBothRun(t *testing.T) {
	bin := poolctest.Binary(t)
	trials := 100
	if testing.Short() {
		trials = 20
	}
	var mu sync.Mutex
	var total raceOutcome
	raced := map[int]string{} // the directories of the trials whose world is to check, by trial
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for trial := range trials {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "pool.hcl"), []byte(racePool), 0o644); err != nil {
			t.Fatal(err)
		}
		leaveStaleLock(t, dir, trial)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			o, err := racePair(t, bin, [2][]string{{dir}, {dir}})
			switch {
			case err != nil:
				t.Errorf("trial %d: %v", trial, err)
				return
			case o.ran != 1:
				t.Errorf("trial %d: %d applies carried out steps; want exactly one (%+v)", trial, o.ran, o)
				return
			}
			mu.Lock()
			total.ran, total.refused, total.idle = total.ran+o.ran, total.refused+o.refused, total.idle+o.idle
			raced[trial] = dir
			mu.Unlock()
		})
	}
	wg.Wait()
	// The worlds are checked here, as CheckWorld may stop the test, which
	// only the test's own goroutine may do.
	for trial, dir := range raced {
		w := poolctest.CheckWorld(t, dir, fmt.Sprintf("trial %d", trial))
		if w.Starts["chat@a"] != 1 {
			t.Errorf("trial %d: chat was started %d times", trial, w.Starts["chat@a"])
		}
	}
	t.Logf("%d trials: %d applies ran, %d were refused by the lock, %d took it after the other and found nothing to do", trials, total.ran, total.refused, total.idle)
	if total.refused == 0 {
		t.Error("no apply was ever refused: the two did not race")
	}
}
