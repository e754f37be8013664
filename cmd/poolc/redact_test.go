package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"poolc.dev/poolc/internal/testing/poolctest"
)

// A plugin that echoes the value of a config field its schema marks
// @poolc(sensitive) in a Configure warning, an Observe warning, its
// stderr, progress and a step failure: apply (text and --json), plan and
// validate never print it, and neither the journal nor the state holds
// it. A value the config check refuses is not shown either.
func TestASensitiveConfigValueIsNeverPrintedNorJournaled(t *testing.T) {
	bin := poolctest.Binary(t)
	const secret = "sig-Q7w9-e3r5"
	dir := blindPool(t, "\n      signing = \""+secret+"\"\n      leak    = true\n    ")
	env := append(os.Environ(), "POOLC_TEST_OBSERVES=lanes")
	var all strings.Builder
	for _, args := range [][]string{
		{"apply", "--auto-approve", dir},
		{"apply", "--auto-approve", "--json", dir},
		{"plan", dir},
		{"validate", "-v", "--allow-unpinned", dir},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, _ := cmd.CombinedOutput()
		all.Write(out)
	}
	printed := all.String()
	for _, leak := range []string{"configured with token", "observed with token", "connecting with token", "authenticating with", "the endpoint refused token"} {
		if !strings.Contains(printed, leak+" [redacted]") {
			t.Errorf("%q [redacted] is never printed: the plugin's text did not come through redacted", leak)
		}
	}
	if strings.Contains(printed, secret) {
		t.Errorf("the sensitive value is printed:\n%s", printed)
	}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(path, "plugins") || filepath.Base(path) == "pool.hcl" || filepath.Base(path) == "blind.jsonl" {
			return err
		}
		if data, _ := os.ReadFile(path); strings.Contains(string(data), secret) {
			t.Errorf("%s holds the sensitive value:\n%s", path, data)
		}
		return nil
	})

	// A value of the wrong type: the config check refuses it without
	// showing it.
	dir = blindPool(t, "\n      signing = 73197319\n    ")
	cmd := exec.Command(bin, "validate", "--allow-unpinned", dir) // the blind plugin lies in the pool's .poolc/plugins
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "signing") || strings.Contains(string(out), "73197319") {
		t.Errorf("validate of a sensitive value of the wrong type: %v\n%s", err, out)
	}
}
