package servicestub

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"poolc.dev/poolc/internal/testing/proctree"
)

// What the two stand-ins share: a service's main process, started in a
// session of its own as a manager's child would be, recorded in a file
// (its pid and start time, so a reused pid is not taken for it) and
// stopped with a signal, a timeout and SIGKILL.

// errExec is a main process that could not be started.
var errExec = errors.New("the executable could not be run")

// spawn starts argv detached with environment env in dir, its output to
// the files stdout and stderr (none: /dev/null), and records it in file.
func spawn(file string, argv, env []string, dir string, stdout, stderr Output) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Args, cmd.Env, cmd.Dir = argv, env, dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	for _, o := range []struct {
		out Output
		to  *io.Writer
	}{{stdout, &cmd.Stdout}, {stderr, &cmd.Stderr}} {
		if o.out.Path == "" {
			continue
		}
		flag := os.O_WRONLY | os.O_CREATE
		switch o.out.Mode {
		case "append":
			flag |= os.O_APPEND
		case "truncate":
			flag |= os.O_TRUNC
		}
		f, err := os.OpenFile(o.out.Path, flag, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		*o.to = f
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: %v", errExec, err)
	}
	pid := cmd.Process.Pid
	if err := os.WriteFile(file, []byte(fmt.Sprintf("%d %s\n", pid, startTime(pid))), 0o600); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// recorded is the live process file records, 0 when it has none.
func recorded(file string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	pid, _ := strconv.Atoi(f[0])
	if pid <= 0 || startTime(pid) != f[1] {
		return 0
	}
	if p, err := proctree.Read(pid); err != nil || p.Ended() {
		return 0
	}
	return pid
}

// startTime is field 22 of /proc/PID/stat, "" when there is no process.
func startTime(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// stopRecorded sends sig to the process file records (to its whole
// process group with group), waits timeout for it to exit, then (if
// kill) sends SIGKILL to its group (to it alone with !killGroup) and
// waits until it is gone; the record is removed.
func stopRecorded(file string, sig syscall.Signal, group bool, timeout time.Duration, kill, killGroup bool) error {
	pid := recorded(file)
	if pid > 0 {
		syscall.Kill(target(pid, group), sig)
		if !waitGone(file, timeout) && kill {
			syscall.Kill(target(pid, killGroup), syscall.SIGKILL)
			waitGone(file, 1<<63-1)
		}
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func target(pid int, group bool) int {
	if group {
		return -pid
	}
	return pid
}

// waitGone polls until file records no live process or d passes.
func waitGone(file string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for recorded(file) > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}
