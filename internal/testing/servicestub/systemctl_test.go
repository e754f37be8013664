package servicestub

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/proctree"
)

// standIn builds the systemctl stand-in and returns a runner of it with
// a user manager of the test's own, and its unit directory.
func standIn(t *testing.T) (func(args ...string) (string, string, int), string) {
	home, rt := t.TempDir(), t.TempDir()
	return runner(t, Systemctl, "HOME="+home, "XDG_RUNTIME_DIR="+rt, "XDG_CONFIG_HOME="), filepath.Join(home, ".config", "systemd", "user")
}

// runner builds stand-in name and returns a runner of it with env added
// to the test's environment: its stdout, its stderr trimmed, its exit
// status.
func runner(t *testing.T, name string, env ...string) func(args ...string) (string, string, int) {
	bin, err := Build(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	env = append(os.Environ(), env...)
	return func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return out.String(), strings.TrimSpace(errb.String()), cmd.ProcessState.ExitCode()
	}
}

// gone waits (30 s at most) until pid has exited.
func gone(pid int) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if p, err := proctree.Read(pid); err != nil || p.Ended() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// TestSystemctlStandInAnswersAsSystemd: the answers poolc relies on, as
// systemctl gives them, and a stop that honours KillSignal, the stop
// timeout and SIGKILL.
func TestSystemctlStandInAnswersAsSystemd(t *testing.T) {
	runRaw, units := standIn(t)
	run := func(args ...string) (string, string, int) {
		t.Helper()
		out, errs, code := runRaw(args...)
		return strings.TrimSpace(out), errs, code
	}
	unit := "lane-a.service"
	if out, errs, code := run("--user", "start", unit); code != 5 || out != "" || errs != "Failed to start lane-a.service: Unit lane-a.service not found." {
		t.Errorf("start of an unknown unit: %q %q exit %d", out, errs, code)
	}
	if out, errs, code := run("--user", "stop", unit); code != 5 || errs != "Failed to stop lane-a.service: Unit lane-a.service not loaded." {
		t.Errorf("stop of an unknown unit: %q %q exit %d", out, errs, code)
	}
	if out, _, code := run("--user", "is-active", unit); code != 3 || out != "inactive" {
		t.Errorf("is-active of an unknown unit: %q exit %d", out, code)
	}
	if out, _, code := run("--user", "show", "-p", "MainPID", "--value", unit); code != 0 || out != "0" {
		t.Errorf("MainPID of an unknown unit: %q exit %d", out, code)
	}
	if _, errs, code := run("start", unit); code == 0 || !strings.Contains(errs, "--user") {
		t.Errorf("the system manager: %q exit %d", errs, code)
	}

	// A process that takes SIGUSR1 as its stop signal and ignores
	// SIGTERM: the stop signal is the unit's, logged to its output file.
	log := filepath.Join(t.TempDir(), "out.log")
	if err := os.MkdirAll(units, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(units, unit), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("[Service]\nExecStart=/bin/sh -c \"trap '' TERM; trap 'echo got $$1; exit 0' USR1; echo up; while :; do sleep 0.05; done\" sh USR1\n" +
		"StandardOutput=append:" + log + "\nKillSignal=SIGUSR1\nTimeoutStopSec=30\n")
	// A unit never loaded loads on its first reference, as systemd does.
	if _, errs, code := run("--user", "start", unit); code != 0 {
		t.Fatalf("start: %s exit %d", errs, code)
	}
	out, _, _ := run("--user", "show", "-p", "MainPID", "--value", unit)
	pid, _ := strconv.Atoi(out)
	if pid <= 0 {
		t.Fatalf("MainPID %q", out)
	}
	if out, _, code := run("--user", "is-active", unit); code != 0 || out != "active" {
		t.Errorf("is-active: %q exit %d", out, code)
	}
	if _, _, code := run("--user", "is-active", "--quiet", unit); code != 0 {
		t.Errorf("is-active --quiet: exit %d", code)
	}
	write("[Service]\nExecStart=/bin/true\n")
	if _, errs, code := run("--user", "start", unit); code != 0 || !strings.Contains(errs, "changed on disk") {
		t.Errorf("start of a unit changed on disk: %q exit %d; want the warning", errs, code)
	}
	if out, _, _ := run("--user", "show", "-p", "MainPID", "--value", unit); out != strconv.Itoa(pid) {
		t.Errorf("an active unit started again: MainPID %s, was %d", out, pid)
	}
	if _, errs, code := run("--user", "stop", unit); code != 0 {
		t.Fatalf("stop: %s exit %d", errs, code)
	}
	if !gone(pid) {
		t.Fatalf("pid %d runs after the stop", pid)
	}
	if b, _ := os.ReadFile(log); string(b) != "up\ngot USR1\n" {
		t.Errorf("log %q; want the stop signal to have been USR1", b)
	}
	if out, _, code := run("--user", "show", "-p", "MainPID", "--value", unit); out != "0" || code != 0 {
		t.Errorf("MainPID after the stop %q", out)
	}

	// A process that ignores the stop signal is killed after the timeout.
	write("[Service]\nExecStart=/bin/sh -c \"trap '' TERM; while :; do sleep 0.05; done\"\nTimeoutStopSec=200ms\nKillMode=mixed\n")
	if _, errs, code := run("--user", "daemon-reload"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := run("--user", "start", unit); code != 0 {
		t.Fatalf("start: %s", errs)
	}
	out, _, _ = run("--user", "show", "-p", "MainPID", "--value", unit)
	pid, _ = strconv.Atoi(out)
	if _, errs, code := run("--user", "stop", unit); code != 0 {
		t.Fatalf("stop: %s exit %d", errs, code)
	}
	if !gone(pid) {
		t.Errorf("pid %d ignoring SIGTERM runs after the stop", pid)
	}

	// The file removed and reloaded: the unit is gone.
	if err := os.Remove(filepath.Join(units, unit)); err != nil {
		t.Fatal(err)
	}
	run("--user", "daemon-reload")
	if _, errs, code := run("--user", "stop", unit); code != 5 || !strings.Contains(errs, "not loaded") {
		t.Errorf("stop after removal and reload: %q exit %d", errs, code)
	}

	// Without a runtime directory there is no user manager to reach.
	var errb strings.Builder
	noenv := func(string) string { return "" }
	if code := SystemctlMain([]string{"--user", "is-active", unit}, noenv, &strings.Builder{}, &errb); code != 1 || !strings.HasPrefix(errb.String(), "Failed to connect to bus") {
		t.Errorf("without XDG_RUNTIME_DIR: %q exit %d", errb.String(), code)
	}
}
