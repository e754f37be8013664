package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"poolc.dev/poolc/internal/testing/poolctest"
)

// neverPrinted runs apply (text and --json), plan (text and --json),
// validate and state show on the blind plugin's pool in dir, which echoes
// secret after each of its messages (after sep), and checks every
// message came through with the secret redacted, and that no file poolc
// wrote holds it; what names the case in messages.
func neverPrinted(t *testing.T, bin, dir, secret, sep, what string) {
	t.Helper()
	env := append(os.Environ(), "POOLC_TEST_OBSERVES=lanes")
	var all strings.Builder
	for _, args := range [][]string{
		{"apply", "--auto-approve", dir},
		{"apply", "--auto-approve", "--json", dir},
		{"plan", dir},
		{"plan", "--json", dir},
		{"validate", "-v", "--allow-unpinned", dir},
		{"state", "show", dir},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, _ := cmd.CombinedOutput()
		all.Write(out)
	}
	printed := all.String()
	for _, leak := range []string{"configured with token", "observed with token", "connecting with token", "authenticating with", "the endpoint refused token"} {
		if !strings.Contains(printed, leak+sep+"[redacted]") {
			t.Errorf("%s%q [redacted] is never printed: the plugin's text did not come through redacted", what, leak)
		}
	}
	if strings.Contains(printed, secret) {
		t.Errorf("%sthe sensitive value is printed:\n%s", what, printed)
	}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(path, "plugins") || strings.HasPrefix(filepath.Base(path), "pool.") || filepath.Base(path) == "blind.jsonl" {
			return err
		}
		if data, _ := os.ReadFile(path); strings.Contains(string(data), secret) {
			t.Errorf("%s%s holds the sensitive value:\n%s", what, path, data)
		}
		return nil
	})
}

// A plugin that echoes the value of a config field its schema marks
// @poolc(sensitive) in a Configure warning, an Observe warning, its
// stderr, progress and a step failure: apply, plan, validate and state
// show never print it, and neither the journal nor the state holds it.
// A value the config check refuses is not shown either.
func TestASensitiveConfigValueIsNeverPrintedNorJournaled(t *testing.T) {
	bin := poolctest.Binary(t)
	const secret = "sig-Q7w9-e3r5"
	dir := blindPool(t, "\n      signing = \""+secret+"\"\n      leak    = true\n    ")
	neverPrinted(t, bin, dir, secret, " ", "")

	// A value of the wrong type: the config check refuses it without
	// showing it.
	dir = blindPool(t, "\n      signing = 73197319\n    ")
	cmd := exec.Command(bin, "validate", "--allow-unpinned", dir) // the blind plugin lies in the pool's .poolc/plugins
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "signing") || strings.Contains(string(out), "73197319") {
		t.Errorf("validate of a sensitive value of the wrong type: %v\n%s", err, out)
	}
}
