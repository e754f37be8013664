// Package kill tests what a SIGKILL of the real poolc binary at a random
// point of an apply leaves with the file state: the state and the sim's
// world always read, and applying again converges with no lane started
// twice.
package kill

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/poolctest"
	"poolc.dev/poolc/pools"
)

// Kill poolc with SIGKILL at a random point of an apply, many times: the
// state file always parses, applying again converges, no lane is ever
// started twice and no alias points at a lane that is not running.
func TestAKilledApplyLosesNothing(t *testing.T) {
	bin := poolctest.Binary(t)
	r := rand.New(rand.NewPCG(2026, 11))
	const trials = 20
	killedMidway := 0
	for trial := range trials {
		dir := poolctest.SparkLab(t, t.TempDir(), 0.004)
		cmd, out := poolctest.StartApply(t, bin, dir)
		time.Sleep(time.Duration(r.IntN(900)) * time.Millisecond) // a random point of the apply
		poolctest.Kill(t, cmd)
		if cmd.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
			killedMidway++
		}

		when := fmt.Sprintf("trial %d, after the kill", trial)
		if data, err := os.ReadFile(filepath.Join(dir, "poolc.state.json")); err == nil {
			if _, err := pools.ParseState("state", data); err != nil {
				t.Fatalf("%s: the state does not parse: %v", when, err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, ".poolc", "sim-world.json")); err == nil {
			poolctest.CheckWorld(t, dir, when)
		}
		// What is left to do is done in virtual time: the kill came
		// during the slow apply, and the next one converges the same way
		// without waiting the simulated seconds.
		poolctest.SparkLab(t, dir, 0)
		again, err := poolctest.Run(t, bin, "apply", "--auto-approve", dir)
		if err != nil {
			t.Fatalf("trial %d: applying again: %v\n%s\nkilled run:\n%s", trial, err, again, out.String())
		}
		poolctest.CheckWorld(t, dir, fmt.Sprintf("trial %d, after applying again", trial))
		if plan, err := poolctest.Run(t, bin, "plan", "--detailed-exitcode", dir); err != nil {
			t.Fatalf("trial %d: the plan after converging is not empty: %v\n%s", trial, err, plan)
		}
	}
	if killedMidway < trials/2 {
		t.Errorf("only %d of %d trials were killed mid-apply; the apply is too fast for this test", killedMidway, trials)
	}
}
