package llama

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/llamastub"
)

var (
	stubOnce sync.Once
	stubPath string
	stubErr  error
)

// stub returns the llama-server stand-in, built once per test binary.
func stub(t testing.TB) string {
	t.Helper()
	stubOnce.Do(func() {
		dir, err := os.MkdirTemp("", "llamastub-")
		if err != nil {
			stubErr = err
			return
		}
		stubPath, stubErr = llamastub.ServerBinary(dir)
	})
	if stubErr != nil {
		t.Fatal(stubErr)
	}
	return stubPath
}

// testSettings runs the stand-in with fast timings under a fresh state
// directory.
func testSettings(t testing.TB) Settings {
	return Settings{
		Binary:   stub(t),
		StateDir: filepath.Join(t.TempDir(), "lanes"),
		Env: map[string]string{
			llamastub.EnvLoadRate:      "4000000", // 4 MB/s: a 2 MB model loads in 0.5s
			llamastub.EnvTokenInterval: "10ms",
		},
		// Deadlines a loaded machine does not reach: a start or drain
		// that runs into one is slow there, not broken.
		StartBase:    30 * time.Second,
		DrainTimeout: 30 * time.Second,
		StopGrace:    3 * time.Second,
		Poll:         50 * time.Millisecond,
	}
}

// freePort returns a loopback port nothing listens on now.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// testLane writes a stand-in model of size bytes and returns a lane
// serving it on a free loopback port.
func testLane(t testing.TB, name string, size int64, aliases ...string) Lane {
	model := filepath.Join(t.TempDir(), name+".gguf")
	if err := llamastub.WriteModel(model, size); err != nil {
		t.Fatal(err)
	}
	return Lane{Name: name, Host: "127.0.0.1", Port: freePort(t), Model: model, Aliases: aliases, SizeBytes: size}
}

// stopAtEnd stops the lane when the test ends, whatever happened.
func stopAtEnd(t testing.TB, n *Node, l Lane) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := n.Stop(ctx, l, nil); err != nil {
			t.Errorf("cleanup stop of %s: %v", l.Name, err)
		}
	})
}

// processLives reports whether pid runs: a zombie, exited but not yet
// reaped by whoever inherited it, does not.
func processLives(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(st), ") Z ")
}
