//go:build e2e

package llama

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"poolc.dev/poolc/internal/sshx"
	"poolc.dev/poolc/internal/testing/testsshd"
)

// TestE2EAHashThatNeverEndsFailsWithinItsBound: a node whose sha256sum
// prints forever, or sleeps, fails the prefetch (the output bound, the
// checksum's time bound), poolc's memory stays bounded meanwhile, and no
// process of the command is left on the node.
func TestE2EAHashThatNeverEndsFailsWithinItsBound(t *testing.T) {
	for _, tc := range []struct {
		name, script, mark string
		want               func(error) bool
	}{
		{"prints forever", "#!/bin/sh\nexec yes poolc-prints-forever\n", "poolc-prints-forever",
			func(err error) bool { var e *sshx.OutputLimitError; return errors.As(err, &e) }},
		{"sleeps", "#!/bin/sh\nsleep 3617\necho never\n", "sleep 3617",
			func(err error) bool { var e *CommandTimeoutError; return errors.As(err, &e) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			if err := os.WriteFile(filepath.Join(bin, "sha256sum"), []byte(tc.script), 0o755); err != nil {
				t.Fatal(err)
			}
			n, _ := sshNode(t, testsshd.WithEnv("PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH")))
			n.session.set.CommandTimeout = 3 * time.Second
			data, sum := weights(t, 200_000)
			src := filepath.Join(t.TempDir(), "src.gguf")
			os.WriteFile(src, data, 0o644)

			var peak atomic.Uint64
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				var ms runtime.MemStats
				for {
					runtime.ReadMemStats(&ms)
					if ms.HeapInuse > peak.Load() {
						peak.Store(ms.HeapInuse)
					}
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}()
			start := time.Now()
			_, err := n.Prefetch(context.Background(), Model{Path: filepath.Join(t.TempDir(), "m.gguf"), Source: "file://" + src, SHA256: sum}, nil)
			took := time.Since(start)
			close(stop)
			<-sampled
			if !tc.want(err) {
				t.Fatalf("err = %v", err)
			}
			t.Logf("failed after %s with: %v; peak heap in use %d MiB", took.Round(time.Millisecond), err, peak.Load()>>20)
			if peak.Load() > 256<<20 {
				t.Errorf("heap in use reached %d MiB", peak.Load()>>20)
			}
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				left := processesWith(tc.mark)
				if len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("left on the node: %q", left)
				}
			}
		})
	}
}

// processesWith lists the command lines of this machine's processes
// holding s.
func processesWith(s string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmd, s) && !strings.Contains(string(st), ") Z ") {
			out = append(out, cmd)
		}
	}
	return out
}
