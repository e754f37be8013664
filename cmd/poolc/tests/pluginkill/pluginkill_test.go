// Package pluginkill kills the sim plugin process (not poolc) in the
// middle of an apply of a generated pool with the file state: the sim's
// world still holds every lane poolc saw started, and applying again
// converges with no lane started twice.
package pluginkill

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/poolgen"
	"poolc.dev/poolc/internal/testing/poolctest"
	"poolc.dev/poolc/internal/testing/proctree"
	"poolc.dev/poolc/runner/store"
)

// pluginOf returns the pid of the plugin process poolc (pid parent)
// started, once it runs, reading /proc.
func pluginOf(t *testing.T, parent int) int {
	t.Helper()
	for deadline := time.Now().Add(poolctest.WaitLimit); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, pid := range proctree.Children(parent) {
			if slices.Contains(proctree.Cmdline(pid), "plugin-serve") {
				return pid
			}
		}
	}
	t.Fatal("poolc started no plugin process")
	return 0
}

// SIGKILL the sim plugin process (not poolc) after a random number of
// steps of an apply of a generated pool, which keeps its world in a file: the world
// still reads, holds every lane the state says poolc saw started, and
// applying again converges with no lane started twice.
func TestAKilledSimPluginLosesNothingAReapplyCannotReconverge(t *testing.T) {
	bin := poolctest.Binary(t)
	var src bytes.Buffer
	if err := poolgen.Write(&src, poolgen.HCL, poolgen.Options{Nodes: 20, Lanes: 200, Members: 2, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	pool := strings.Replace(src.String(), "builtin = true", "builtin = true\n    config = {\n      time_scale = 0.0002\n    }", 1)
	if pool == src.String() {
		t.Fatal("the generated pool has no builtin plugin to configure")
	}
	r := rand.New(rand.NewPCG(5, 2026))
	killed := 0
	for trial := range 4 {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "gen.hcl"), []byte(pool), 0o644); err != nil {
			t.Fatal(err)
		}
		// Kill it once poolc has seen a random number of steps done.
		cmd := exec.Command(bin, "apply", "--auto-approve", "--json", dir)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		at, done := 1+r.IntN(350), 0
		var last string
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			last = lines.Text()
			if strings.Contains(last, `"event":"done"`) {
				if done++; done == at {
					if syscall.Kill(pluginOf(t, cmd.Process.Pid), syscall.SIGKILL) == nil {
						killed++
					}
				}
			}
		}
		cmd.Wait()
		out := errOut.String() + last

		when := fmt.Sprintf("trial %d, after the kill", trial)
		w := poolctest.CheckWorld(t, dir, when)
		st, err := store.Open(filepath.Join(dir, "poolc.state.json")).Read()
		if err != nil {
			t.Fatalf("%s: the state does not read: %v", when, err)
		}
		for _, l := range st.Fleet.Lanes {
			if w.Fleet.Lane(l.Name, l.Node) == nil {
				t.Fatalf("%s: the state has lane %s@%s, which poolc saw started, but the sim world lost it", when, l.Name, l.Node)
			}
		}
		t.Logf("%s (at step %d; poolc saw %d done): %d lanes in the state, %d in the world", when, at, done, len(st.Fleet.Lanes), len(w.Fleet.Lanes))
		// The rest is done in virtual time (the pool as generated).
		if err := os.WriteFile(filepath.Join(dir, "gen.hcl"), src.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if again, err := poolctest.Run(t, bin, "apply", "--auto-approve", dir); err != nil {
			t.Fatalf("trial %d: applying again: %v\n%s\nkilled run:\n%s", trial, err, again, out)
		}
		poolctest.CheckWorld(t, dir, fmt.Sprintf("trial %d, after applying again", trial))
		if plan, err := poolctest.Run(t, bin, "plan", "--detailed-exitcode", dir); err != nil {
			t.Fatalf("trial %d: the plan after converging is not empty: %v\n%s", trial, err, plan)
		}
	}
	if killed == 0 {
		t.Error("the plugin was never killed")
	}
}
