package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/poolctest"
	"poolc.dev/poolc/plugins/sdk"
)

// poolc plugin-serve NAME --debug serves a built-in actuator for a
// debugger and prints the POOLC_REATTACH_PLUGINS line, as sdk.ServeDebug
// does for a plugin of the SDK; poolc plan with that line set plans
// through the process it names, and fails once that process is gone.
func TestPluginServeDebugReattach(t *testing.T) {
	bin := poolctest.Binary(t)
	dir := poolctest.SparkLab(t, t.TempDir(), 0)

	serve := exec.Command(bin, "plugin-serve", "sim", "--debug")
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	serve.Stderr = &stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = r.WriteTo(io.Discard) // its log lines
		exited <- serve.Wait()
	}()
	stopped := false
	stop := func() error {
		stopped = true
		serve.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			return err
		case <-time.After(time.Minute):
			serve.Process.Kill()
			<-exited
			t.Fatal("plugin-serve --debug did not stop within a minute of SIGTERM")
		}
		return nil
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})

	var line string
	select {
	case line = <-lines:
	case <-time.After(time.Minute):
		t.Fatal("plugin-serve sim --debug printed no line within a minute")
	}
	value, ok := strings.CutPrefix(strings.TrimSpace(line), sdk.ReattachEnv+"='")
	value, closed := strings.CutSuffix(value, "'")
	if !ok || !closed {
		stop()
		t.Fatalf("plugin-serve sim --debug printed %q, want %s='{...}'; stderr:\n%s", line, sdk.ReattachEnv, stderr.String())
	}
	var entries map[string]sdk.ReattachConfig
	if err := json.Unmarshal([]byte(value), &entries); err != nil {
		t.Fatalf("plugin-serve sim --debug printed %q: %v", line, err)
	}
	if rc, ok := entries["sim"]; !ok || rc.Pid != serve.Process.Pid || rc.Addr.Network != "unix" {
		t.Fatalf("plugin-serve sim --debug printed %q: want the entry of sim, served by pid %d on a unix socket", line, serve.Process.Pid)
	}

	plan := func() (string, error) {
		cmd := exec.Command(bin, "plan", dir)
		cmd.Env = append(os.Environ(), sdk.ReattachEnv+"="+value)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := plan()
	if err != nil || !strings.Contains(out, "+ start cognition@spark-node-03") {
		t.Fatalf("plan through the reattached sim: %v\n%s", err, out)
	}

	if err := stop(); err != nil {
		t.Errorf("plugin-serve --debug stopped by SIGTERM: %v, want exit 0; stderr:\n%s", err, stderr.String())
	}
	out, err = plan()
	if err == nil || !strings.Contains(out, "plugin sim did not start") {
		t.Errorf("plan with the reattached sim stopped: %v, want it to fail naming plugin sim:\n%s", err, out)
	}
}
