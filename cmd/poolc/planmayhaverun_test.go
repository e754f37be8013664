package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"poolc.dev/poolc/internal/testing/poolctest"
)

// poolc plan reads the journal as apply does: after a kill that left a
// start in flight at a plugin that observes no lanes, the plan shows the
// step as "may have run" in text, Markdown and JSON, and sends nothing.
func TestPlanShowsTheStepsAKilledApplyLeftThatMayHaveRun(t *testing.T) {
	bin := poolctest.Binary(t)
	dir := blindPool(t, "")
	killMidStart(t, bin, dir, nil)

	// The blind plugin's binary lies beside the pool, where plan runs it
	// only when told to.
	out, err := poolctest.Run(t, bin, "plan", "--allow-unpinned", dir)
	if err != nil || !strings.Contains(out, "May have run") ||
		!strings.Contains(out, "? start:chat@a may have run: the last apply was killed while it was in flight, and plugin blind does not observe lanes; this plan holds it again: apply refuses to send it again without --retry-uncertain") {
		t.Errorf("plan (text) does not show start:chat@a as may-have-run: %v\n%s", err, out)
	}

	out, err = poolctest.Run(t, bin, "plan", "--allow-unpinned", "--format", "markdown", dir)
	if err != nil || !strings.Contains(out, "> [!CAUTION]") || !strings.Contains(out, "> - `start:chat@a`: start:chat@a may have run") {
		t.Errorf("plan (markdown) does not show start:chat@a as may-have-run: %v\n%s", err, out)
	}

	js, err := exec.Command(bin, "plan", "--allow-unpinned", "--format", "json", dir).Output()
	var doc struct {
		MayHaveRun []struct {
			Step, Plugin, Part string
			Planned            bool
		} `json:"may_have_run"`
	}
	if err != nil || json.Unmarshal(js, &doc) != nil || len(doc.MayHaveRun) != 1 {
		t.Fatalf("plan --format json: %v\n%s", err, js)
	}
	if m := doc.MayHaveRun[0]; m.Step != "start:chat@a" || m.Plugin != "blind" || m.Part != "lanes" || !m.Planned {
		t.Errorf("plan --format json: may_have_run = %+v, want start:chat@a, blind, lanes, planned", m)
	}

	if n := sends(t, dir, "start:chat@a"); n != 1 {
		t.Errorf("start:chat@a was sent %d times; plan sends nothing", n)
	}
	// Plan settled nothing: apply still refuses to send the step again.
	if out, err := poolctest.Run(t, bin, "apply", "--auto-approve", dir); err == nil || !strings.Contains(out, "start:chat@a may have run") {
		t.Errorf("apply after plan: %v\n%s", err, out)
	}
}
