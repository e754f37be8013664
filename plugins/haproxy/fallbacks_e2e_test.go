//go:build e2e

package haproxy

import (
	"fmt"
	"os"
	"slices"
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

// TestE2EALaneOnlyFallenBackToIsServedWhereItRuns: lane spare has no
// alias; chat falls back to it. The gateway's server for spare is where
// spare runs after the bring-up, follows it to another node, serves chat
// once chat's lane dies, and goes when spare leaves the pool. Before, no
// step reached the gateway for a lane no alias routes to: spare had no
// server at all (chat's fallback to it never worked), and a lane moved
// kept its server at the old address (the fleet walk, seed 2 change 22).
func TestE2EALaneOnlyFallenBackToIsServedWhereItRuns(t *testing.T) {
	const fallbackBound = 10 * time.Second
	f := newFleetOf(t, fleetOpts{master: true}, extraLane{name: "spare", residency: "keep-warm", placement: `"n2"`})
	f.chatFallbacks = `"spare"`
	f.writePool(`"n1"`)
	f.apply()
	f.planIsEmpty("after the bring-up")
	f.laneServedAt("after the bring-up", "spare", 1)

	f.extra[0].placement = `"n3"`
	f.writePool(`"n1"`)
	out := f.apply()
	f.outputNames(out, "route:~spare", "drain:spare@n2")
	f.planIsEmpty("after spare moved")
	f.laneServedAt("after spare moved", "spare", 2)
	f.noLeftovers("after spare moved")

	pid := f.lanePIDs()["n1/cognition"]
	if pid == 0 {
		t.Fatalf("no process of cognition in %v", f.lanePIDs())
	}
	syscall.Kill(pid, syscall.SIGKILL)
	time.Sleep(fallbackBound)
	load := loadgen.Start(f.proxy.base(), "chat", 4, 10)
	if !load.WaitServed(20, 60*time.Second) {
		t.Errorf("chat is not served %s after its lane died, with spare its fallback: %d failed", fallbackBound, load.Failed())
	}
	r := load.Stop()
	t.Logf("chat from %s after its lane died on: %d served, %d failed", fallbackBound, r.Served, r.Failed)
	if r.Failed != 0 {
		t.Errorf("%d requests for chat failed with its fallback spare up: %q", r.Failed, r.Errors)
	}

	f.extra, f.chatFallbacks = nil, ""
	f.writePool(`"n1"`)
	f.apply()
	f.planIsEmpty("after spare left the pool")
	f.laneServedAt("after spare left the pool", "spare", -1)
	f.noLeftovers("after spare left the pool")
}

// laneServedAt asserts that HAProxy's live servers for lane are exactly
// one, ready at node i's address and the lane's port; none when i < 0.
func (f *fleet) laneServedAt(when, lane string, i int) {
	f.t.Helper()
	var live []string
	for _, s := range f.servers(when) {
		if s.Backend == LaneBackendName(lane) && !s.Maint() {
			live = append(live, fmt.Sprintf("%s ready=%v", joinHostPort(s.Addr, s.Port), s.Ready()))
		}
	}
	var want []string
	if i >= 0 {
		want = []string{fmt.Sprintf("%s ready=true", joinHostPort(f.nodes[i].Host, f.port(lane)))}
	}
	if !slices.Equal(live, want) {
		f.t.Errorf("%s: HAProxy's live servers for lane %s are %q, want %q", when, lane, live, want)
	}
}
