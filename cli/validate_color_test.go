package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// On a terminal validate colors the position of a finding, as plan
// does (red for an error); --no-color and NO_COLOR turn it off.
func TestValidateColorsFindingsOnATerminal(t *testing.T) {
	dir := t.TempDir()
	pool := filepath.Join(dir, "pool.hcl")
	src := "pool \"lab\" {\n  node \"a\" {\n    address   = \"a.lan\"\n    memory_gb = \"lots\"\n  }\n}\n"
	if err := os.WriteFile(pool, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Fatalf("opening a pseudo-terminal: %v", err)
		}
		defer ptmx.Close()
		if code := Main(append([]string{"validate"}, args...), Stdio{In: tty, Out: tty, Err: tty}); code != ExitError {
			t.Errorf("validate %v: exit %d, want %d", args, code, ExitError)
		}
		tty.Close()
		var got bytes.Buffer
		done := make(chan struct{})
		go func() { io.Copy(&got, ptmx); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the terminal did not close")
		}
		return got.String()
	}
	colored := run(pool)
	if !strings.Contains(colored, "\033[1;31m"+pool+":4:17:\033[0m") {
		t.Errorf("on a terminal the error's position is not red:\n%q", colored)
	}
	for _, c := range []struct {
		name string
		args []string
	}{{"--no-color", []string{"--no-color", pool}}, {"-no-color", []string{"-no-color", pool}}} {
		if out := run(c.args...); strings.Contains(out, "\033[") || !strings.Contains(out, pool+":4:17:") {
			t.Errorf("validate %s on a terminal: %q, want the finding without colors", c.name, out)
		}
	}
	t.Setenv("NO_COLOR", "1")
	if out := run(pool); strings.Contains(out, "\033[") {
		t.Errorf("validate with NO_COLOR on a terminal: %q, want no colors", out)
	}
}
