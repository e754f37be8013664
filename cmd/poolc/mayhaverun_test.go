package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"poolc.dev/poolc/internal/testing/poolctest"
)

// blindPool writes a pool whose node a runs its lanes through the blind
// test plugin (built into .poolc/plugins), with config, and returns the
// pool's directory.
func blindPool(t *testing.T, config string) string {
	t.Helper()
	dir := t.TempDir()
	poolctest.InstallPlugin(t, dir, "blind", "cmd/poolc/testdata/blindplugin")
	pool := fmt.Sprintf(`pool "blind" {
  node "a" {
    address   = "a.lan"
    memory_gb = 64
    runtime   = "blind"
  }
  model "m" {
    path      = "/models/m.gguf"
    size_gb   = 2
    memory_gb = 4
  }
  lane "chat" {
    model     = "m"
    residency = "keep-warm"
    aliases   = ["chat"]
    placement = ["a"]
    port      = 8080
  }
  plugin "blind" {
    config = {%s}
  }
}
`, config)
	if err := os.WriteFile(filepath.Join(dir, "pool.hcl"), []byte(pool), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sends counts the times the blind plugin was sent step id.
func sends(t *testing.T, dir, id string) int {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(dir, ".poolc", "blind.jsonl"))
	return strings.Count(string(data), fmt.Sprintf(`{"sent":%q}`, id))
}

// killMidStart applies the pool and SIGKILLs poolc once the blind plugin
// holds start:chat@a open.
func killMidStart(t *testing.T, bin, dir string, env []string) {
	t.Helper()
	cmd := exec.Command(bin, "apply", "--auto-approve", "--json", dir)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if strings.Contains(lines.Text(), `"event":"progress"`) && strings.Contains(lines.Text(), `"step":"start:chat@a"`) {
			break
		}
	}
	poolctest.Kill(t, cmd)
	if sends(t, dir, "start:chat@a") != 1 {
		t.Fatalf("the plugin was not holding start:chat@a when poolc was killed\n%s", errOut.String())
	}
}

// A plugin that observes no lanes: a start that was in flight when poolc
// was killed is reported on the next apply as "may have run", in text and
// in the JSON event stream, and is not sent again until --retry-uncertain.
func TestAStepANonObservingPluginHadInFlightIsNotSentAgainSilently(t *testing.T) {
	bin := poolctest.Binary(t)
	dir := blindPool(t, "")
	killMidStart(t, bin, dir, nil)

	out, err := poolctest.Run(t, bin, "apply", "--auto-approve", "--json", dir)
	if err == nil {
		t.Fatalf("the apply after the kill ran:\n%s", out)
	}
	var event struct {
		Event, Step, Plugin, Message string
	}
	found := false
	for _, line := range strings.Split(out, "\n") {
		if json.Unmarshal([]byte(line), &event) == nil && event.Event == "may-have-run" {
			found = event.Step == "start:chat@a" && event.Plugin == "blind"
		}
	}
	if !found || !strings.Contains(out, `"event":"diagnostics"`) || !strings.Contains(out, "--retry-uncertain") {
		t.Errorf("apply --json does not report start:chat@a as may-have-run, then refuse:\n%s", out)
	}
	out, err = poolctest.Run(t, bin, "apply", "--auto-approve", dir)
	if err == nil || !strings.Contains(out, "start:chat@a may have run") || !strings.Contains(out, "plugin blind does not observe lanes") {
		t.Errorf("apply (text) does not refuse, naming the step: %v\n%s", err, out)
	}
	if n := sends(t, dir, "start:chat@a"); n != 1 {
		t.Fatalf("start:chat@a was sent %d times before --retry-uncertain", n)
	}

	out, err = poolctest.Run(t, bin, "apply", "--auto-approve", "--retry-uncertain", dir)
	if err != nil || !strings.Contains(out, "start:chat@a may have run") || !strings.Contains(out, "sending it again") {
		t.Fatalf("apply --retry-uncertain: %v\n%s", err, out)
	}
	if n := sends(t, dir, "start:chat@a"); n != 2 {
		t.Errorf("start:chat@a was sent %d times after --retry-uncertain, want 2", n)
	}
}

// The same kill with the plugin observing lanes: the refresh sees the
// lane started, and the next apply neither reports it nor sends it again.
func TestAStepAnObservingPluginHadInFlightIsSettledByTheRefresh(t *testing.T) {
	bin := poolctest.Binary(t)
	dir := blindPool(t, "")
	env := []string{"POOLC_TEST_OBSERVES=lanes"}
	killMidStart(t, bin, dir, env)

	cmd := exec.Command(bin, "apply", "--auto-approve", dir)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("may have run")) {
		t.Fatalf("apply after the kill: %v\n%s", err, out)
	}
	if n := sends(t, dir, "start:chat@a"); n != 1 {
		t.Errorf("start:chat@a was sent %d times; the refresh saw it done\n%s", n, out)
	}
}
