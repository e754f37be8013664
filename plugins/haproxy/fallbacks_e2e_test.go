//go:build e2e

package haproxy

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/loadgen"
)

// TestE2EFallbacksAddedToAnAliasAreTriedAfterOneApply: alias chat's
// fallbacks grow, in the pool alone, from one to four, past the three the
// configuration HAProxy runs tries; one poolc apply sets them (the
// refresh sees HAProxy's fallbacks differ, the apply routes chat again
// and reloads HAProxy for the deeper rules) and the next plan is empty.
// Then chat's lane and its first three fallbacks are killed by hand: chat
// is served by the fourth, scribe, within fallbackBound, without an
// apply.
func TestE2EFallbacksAddedToAnAliasAreTriedAfterOneApply(t *testing.T) {
	const fallbackBound = 10 * time.Second
	var extra []extraLane
	for _, name := range []string{"e1", "e2", "e3"} {
		extra = append(extra, extraLane{name: name, residency: "keep-warm", placement: `"n2"`})
	}
	f := newFleetOf(t, fleetOpts{master: true}, extra...)
	f.chatFallbacks = `"e1"`
	f.writePool(`"n1"`)
	f.apply()
	f.planIsEmpty("after the bring-up")

	f.chatFallbacks = `"e1", "e2", "e3", "scribe"`
	f.writePool(`"n1"`)
	out := f.apply()
	t.Logf("the apply that adds chat's fallbacks:\n%s", out)
	f.outputNames(out, "route chat")
	f.planIsEmpty("after the fallbacks were added")
	cfg, err := os.ReadFile(f.proxy.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "field(4,+)") {
		t.Errorf("the configuration poolc keeps tries fewer than 4 fallbacks:\n%s", cfg)
	}

	pids := f.lanePIDs()
	killed := time.Now()
	for _, lane := range []string{"n1/cognition", "n2/e1", "n2/e2", "n2/e3"} {
		if pids[lane] == 0 {
			t.Fatalf("no process of %s in %v", lane, pids)
		}
		syscall.Kill(pids[lane], syscall.SIGKILL)
	}
	time.Sleep(fallbackBound)
	load := loadgen.Start(f.proxy.base(), "chat", 4, 10)
	if !load.WaitServed(20, 60*time.Second) {
		t.Errorf("chat is not served %s after its lane and first three fallbacks died: %d failed", fallbackBound, load.Failed())
	}
	r := load.Stop()
	t.Logf("chat from %s after the kill on: %d served, %d failed", fallbackBound, r.Served, r.Failed)
	if r.Failed != 0 {
		t.Errorf("%d requests for chat failed after the fallback bound (%s after the kill): %q", r.Failed, time.Since(killed).Round(time.Second), r.Errors)
	}
}
