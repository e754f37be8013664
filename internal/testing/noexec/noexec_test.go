//go:build linux && amd64

package noexec

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The filter kills a process that starts another, and leaves one that
// only runs goroutines (and so threads) alone.
func TestForbid(t *testing.T) {
	switch os.Getenv("NOEXEC_CHILD") {
	case "exec":
		if err := Forbid(); err != nil {
			t.Fatal(err)
		}
		exec.Command("/bin/true").Run()
		t.Fatal("still alive after starting a process")
	case "threads":
		if err := Forbid(); err != nil {
			t.Fatal(err)
		}
		done := make(chan bool)
		for range 50 {
			go func() { b := make([]byte, 1<<20); _ = b; done <- true }()
		}
		for range 50 {
			<-done
		}
		return
	}
	for _, c := range []struct {
		child string
		dies  bool
	}{{"exec", true}, {"threads", false}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestForbid$")
		cmd.Env = append(os.Environ(), "NOEXEC_CHILD="+c.child)
		out, err := cmd.CombinedOutput()
		switch {
		case c.dies && (err == nil || !strings.Contains(err.Error(), "bad system call")):
			t.Errorf("%s: want the child killed by SIGSYS, got %v:\n%s", c.child, err, out)
		case !c.dies && err != nil:
			t.Errorf("%s: %v:\n%s", c.child, err, out)
		}
	}
}
