package proctree

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Proc
	}{
		{"42 (sleep) S 7 42 7 0 -1 4194560", Proc{PID: 42, PPID: 7, State: 'S'}},
		// A command name may hold spaces and parentheses.
		{"9 (a b) (c)) Z 1 9 9", Proc{PID: 9, PPID: 1, State: 'Z'}},
	} {
		got, err := ParseStat([]byte(c.in))
		if err != nil || got != c.want {
			t.Errorf("ParseStat(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "42", "x (sh) S 1", "42 (sh)", "42 (sh) S", "42 (sh) S x", "42 (sh) SS 1", "(sh) S 1"} {
		if p, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q) = %+v, want an error", bad, p)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (sleep) S 7 42 7 0 -1"))
	f.Add([]byte("9 (a ) b) Z 1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseStat(data)
		if err == nil && (p.PID <= 0 || p.PPID < 0 || p.State == 0) {
			t.Fatalf("ParseStat(%q) = %+v without an error", data, p)
		}
	})
}

// A shell started here, with a sleep of its own, shows as this process's
// child and the sleep as its descendant, with its command line; once
// killed, the sleep has ended (a zombie until the shell reaps it, then
// gone from the table).
func TestTheProcessesOfAChildShell(t *testing.T) {
	sh := exec.Command("/bin/sh", "-c", "sleep 60 & wait")
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Process.Kill(); sh.Wait() })
	// Between its fork and its exec the shell's child still runs the
	// shell, with the shell's command line: wait for the exec, which a
	// loaded machine may delay, rather than for the fork.
	want := []string{"sleep", "60"}
	var below []int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		below = Descendants(sh.Process.Pid)
		if len(below) > 0 && slices.Equal(Cmdline(below[0]), want) {
			break
		}
		if time.Now().After(deadline) {
			var args []string
			if len(below) > 0 {
				args = Cmdline(below[0])
			}
			t.Fatalf("the shell started no %q in 30s: descendants %v, the first running %q", want, below, args)
		}
	}
	if !slices.Contains(Children(os.Getpid()), sh.Process.Pid) {
		t.Errorf("Children(%d) = %v, want the shell %d", os.Getpid(), Children(os.Getpid()), sh.Process.Pid)
	}
	sleep := below[0]
	if p, err := Read(sleep); err != nil || p.PPID != sh.Process.Pid || p.Ended() {
		t.Fatalf("Read(%d) = %+v, %v; want a running child of %d", sleep, p, err, sh.Process.Pid)
	}
	syscall.Kill(sleep, syscall.SIGKILL)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		p, err := Read(sleep)
		if err != nil || p.Ended() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed sleep %d still runs: %+v", sleep, p)
		}
	}
}
