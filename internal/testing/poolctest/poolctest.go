// Package poolctest is what the tests that drive the real poolc binary
// share, as CI and operators run it: poolc and the test plugins built once
// from this checkout, the example pool made slow enough to kill, and the
// checks of what the simulated hardware saw.
//
// Binaries are built into one directory per checkout under the user's
// cache directory and kept there. The go command relinks a binary only
// when its sources changed and replaces it by a rename, and a file lock
// lets one test process build at a time, so the test packages that go
// test runs in parallel link poolc once between them instead of once each,
// and a binary a test is running is never rewritten under it.
package poolctest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/proctree"
	"poolc.dev/poolc/plugins/simactuator"
	"poolc.dev/poolc/pools"
)

// WaitLimit is how long a test waits for something that must happen (a
// process starting or ending, a lock taken, a key written) before it
// fails: long enough for a 2-core machine under the load of several test
// packages, since a condition waited on costs nothing when it comes early.
const WaitLimit = 2 * time.Minute

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error

	buildMu sync.Mutex
	builds  = map[string]*build{}
)

// build is one binary, built at most once per test process.
type build struct {
	once sync.Once
	path string
	err  error
}

// Root is the root directory of the poolc module, whatever the directory
// of the test package that asks.
func Root(t testing.TB) string {
	t.Helper()
	rootOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		gomod := strings.TrimSpace(string(out))
		switch {
		case err != nil:
			rootErr = fmt.Errorf("go env GOMOD: %v", err)
		case gomod == "" || gomod == os.DevNull:
			rootErr = errors.New("the test does not run inside the poolc module")
		default:
			rootDir = filepath.Dir(gomod)
		}
	})
	if rootErr != nil {
		t.Fatal(rootErr)
	}
	return rootDir
}

// Binary is poolc built from this checkout.
func Binary(t testing.TB) string {
	t.Helper()
	return Build(t, "cmd/poolc")
}

// Build returns the command in dir (a directory relative to the module's
// root; one with its own go.mod is built in its own module), built from
// this checkout. The commands of cmd/ have the names go install gives
// them, in one directory, so poolc finds poolc-etcd beside it.
func Build(t testing.TB, dir string) string {
	t.Helper()
	buildMu.Lock()
	b := builds[dir]
	if b == nil {
		b = &build{}
		builds[dir] = b
	}
	buildMu.Unlock()
	b.once.Do(func() { b.path, b.err = goBuild(Root(t), dir) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// goBuild builds root/dir into the checkout's binary directory, holding
// the directory's lock while the go command runs.
func goBuild(root, dir string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "poolc-test-bin", fmt.Sprintf("%x", sha256.Sum256([]byte(root)))[:16])
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(bin, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("locking %s: %v", bin, err)
	}
	name := strings.ReplaceAll(filepath.ToSlash(dir), "/", "-")
	if installed, ok := strings.CutPrefix(filepath.ToSlash(dir), "cmd/"); ok && !strings.Contains(installed, "/") {
		name = installed
	}
	out := filepath.Join(bin, name)
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = filepath.Join(root, dir)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", dir, err, msg)
	}
	return out, nil
}

// InstallPlugin puts the plugin built from dir (relative to the module's
// root) into the pool directory's .poolc/plugins as poolc-plugin-NAME,
// where poolc finds it, and returns its path there.
func InstallPlugin(t testing.TB, poolDir, name, dir string) string {
	t.Helper()
	data, err := os.ReadFile(Build(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(poolDir, ".poolc", "plugins", "poolc-plugin-"+name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// Run runs bin with args and returns what it printed, stdout and stderr
// interleaved.
func Run(t testing.TB, bin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// StartApply starts poolc apply --auto-approve with args on the pool in
// dir and returns the process and what it prints.
func StartApply(t testing.TB, bin, dir string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, append(append([]string{"apply", "--auto-approve"}, args...), dir)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

// WaitOrDump waits for cmd, which prints to out; past limit, it has the
// Go runtime print the process's goroutines (SIGQUIT) and fails the test
// with its output.
func WaitOrDump(t testing.TB, cmd *exec.Cmd, out *bytes.Buffer, limit time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		cmd.Process.Signal(syscall.SIGQUIT)
		<-done
		t.Fatalf("%v did not end within %v:\n%s", cmd.Args, limit, out)
		return nil
	}
}

// Kill sends SIGKILL to the poolc process cmd runs and waits until it and
// every process it started (its plugins, which die with it through
// Pdeathsig) have ended, so that nothing of the killed apply still runs
// when the test looks at what it left. It returns when the signal was
// sent.
func Kill(t testing.TB, cmd *exec.Cmd) time.Time {
	t.Helper()
	below := proctree.Descendants(cmd.Process.Pid)
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for _, pid := range below {
		for deadline := time.Now().Add(WaitLimit); ; time.Sleep(5 * time.Millisecond) {
			if p, err := proctree.Read(pid); err != nil || p.Ended() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %d (%q), started by the killed poolc, still runs %v after the kill", pid, proctree.Cmdline(pid), WaitLimit)
			}
		}
	}
	return sent
}

// SparkLab writes the example pool (examples/spark-lab) into dir with the
// built-in sim taking real time, timeScale of a second for each simulated
// one (0: virtual time, steps return at once), and returns dir.
func SparkLab(t testing.TB, dir string, timeScale float64) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(Root(t), "examples", "spark-lab", "spark-lab.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(src), "  plugin \"sim\" {\n    builtin = true\n  }",
		fmt.Sprintf("  plugin \"sim\" {\n    builtin = true\n    config = {\n      time_scale = %g\n    }\n  }", timeScale), 1)
	if cfg == string(src) {
		t.Fatal("the example's sim plugin block changed; update poolctest.SparkLab")
	}
	if err := os.WriteFile(filepath.Join(dir, "spark-lab.hcl"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// CheckWorld reads the sim's world beside the pool in dir and fails the
// test on what the hardware must never see: a violation the sim
// recorded, a lane started twice, an alias routed to a lane that is not
// running. when says at which point of the test it looked.
func CheckWorld(t testing.TB, dir, when string) simactuator.World {
	t.Helper()
	w, _, err := simactuator.OpenWorld(filepath.Join(dir, ".poolc", "sim-world.json"))
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	if len(w.Violations) > 0 {
		t.Fatalf("%s: the sim saw violations: %v", when, w.Violations)
	}
	for key, n := range w.Starts {
		if n > 1 {
			t.Fatalf("%s: lane %s was started %d times", when, key, n)
		}
	}
	for _, r := range w.Fleet.Routes {
		if r.Lane != pools.Cloud && w.Fleet.Lane(r.Lane, r.Node) == nil {
			t.Fatalf("%s: alias %s routes to %s@%s, which is not running", when, r.Alias, r.Lane, r.Node)
		}
	}
	return w
}
