//go:build e2e

package haproxy

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/loadgen"
)

// TestE2EAGatewayReloadedOrRestartedKeepsItsRoutes applies a fleet whose
// lanes run on 127.0.0.2-4 behind a HAProxy whose configuration poolc
// keeps (config_file), then reloads HAProxy (-x, -sf) under streaming
// load on every alias: not one request fails; then restarts it: every
// alias answers again by itself and the refreshed plan is empty.
func TestE2EAGatewayReloadedOrRestartedKeepsItsRoutes(t *testing.T) {
	f := newFleet(t)
	f.declared = true
	f.writePool(`"n1", "n2"`)
	f.apply()
	f.planIsEmpty("after the bring-up")
	aliases := []string{"chat", "notes"}
	load := func() []*loadgen.Load {
		var loads []*loadgen.Load
		for _, a := range aliases {
			l := loadgen.Start(f.proxy.base(), a, 4, 10)
			if !l.WaitServed(10, 60*time.Second) {
				t.Fatalf("no traffic for %s: %d failed", a, l.Failed())
			}
			loads = append(loads, l)
		}
		return loads
	}
	stop := func(loads []*loadgen.Load, what string) (failed int64, summary string) {
		var parts []string
		for i, l := range loads {
			if !l.WaitServed(10, 60*time.Second) {
				t.Errorf("no traffic for %s after %s: %d failed", aliases[i], what, l.Failed())
			}
			r := l.Stop()
			failed += r.Failed
			parts = append(parts, fmt.Sprintf("%s %d served, %d failed (%q)", aliases[i], r.Served, r.Failed, r.Errors))
		}
		return failed, strings.Join(parts, "; ")
	}

	loads := load()
	f.proxy.reload(t)
	failed, summary := stop(loads, "the reload")
	t.Logf("a reload (-x -sf) under load: %s", summary)
	if failed != 0 {
		t.Errorf("%d requests failed across the reload", failed)
	}
	f.planIsEmpty("after the reload")

	loads = load()
	start := time.Now()
	f.proxy.restart(t)
	for _, a := range aliases {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			err := loadgen.Chat(t.Context(), http.DefaultClient, f.proxy.base(), a, 3)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("alias %s does not answer 30s after a restart: %v", a, err)
			}
		}
	}
	answered := time.Since(start)
	_, summary = stop(loads, "the restart")
	t.Logf("a restart under load: every alias answered again by itself %s after the kill; %s", answered.Round(time.Millisecond), summary)
	f.planIsEmpty("after the restart")
}

// TestE2EALaneAddedAndOneRemovedByApplyUnderLoad adds a lane the running
// HAProxy has no backend for, then removes it, each by poolc apply alone
// (the plugin rewrites the configuration and reloads HAProxy through its
// master CLI), under streaming load on the other aliases: not one
// request fails, and the removed lane's servers end in maintenance.
func TestE2EALaneAddedAndOneRemovedByApplyUnderLoad(t *testing.T) {
	f := newFleetOf(t, fleetOpts{master: true})
	f.writePool(`"n1", "n2"`)
	f.apply()
	f.planIsEmpty("after the bring-up")
	aliases := []string{"chat", "notes"}
	f.extra = []extraLane{{name: "painter", residency: "keep-warm", placement: `"n2"`, aliases: []string{"draw"}}}
	f.applyUnderLoad("adding lane painter", 4, aliases, func() { f.writePool(`"n1", "n2"`) }, "start:painter@n2", "route:draw")
	f.planIsEmpty("after the add")
	if err := loadgen.Chat(t.Context(), http.DefaultClient, f.proxy.base(), "draw", 3); err != nil {
		t.Fatalf("draw after the add: %v", err)
	}
	f.extra = nil
	f.applyUnderLoad("removing lane painter", 4, aliases, func() { f.writePool(`"n1", "n2"`) }, "stop:painter@n2", "route:draw")
	f.planIsEmpty("after the removal")
	f.noLeftovers("after the removal")
}

// TestE2EADeadLanesAliasIsServedByItsFallback kills lane cognition's
// process by hand under streaming load for its alias chat, whose
// fallback is scribe (on another node): with no apply, chat is answered
// by scribe within fallbackBound, and not one request fails after it.
func TestE2EADeadLanesAliasIsServedByItsFallback(t *testing.T) {
	const fallbackBound = 10 * time.Second
	f := newFleetOf(t, fleetOpts{master: true})
	f.chatFallbacks = `"scribe"`
	f.writePool(`"n1", "n2"`)
	f.apply()
	f.planIsEmpty("after the bring-up")
	pid := f.lanePIDs()["n1/cognition"]
	if pid == 0 {
		t.Fatalf("lane processes %v", f.lanePIDs())
	}
	before := loadgen.Start(f.proxy.base(), "chat", 4, 10)
	if !before.WaitServed(10, 60*time.Second) {
		t.Fatalf("no traffic for chat: %d failed", before.Failed())
	}
	killed := time.Now()
	syscall.Kill(pid, syscall.SIGKILL)
	// Requests until the health checks see the lane down may fail: they
	// were sent to it. After the bound, none may.
	time.Sleep(fallbackBound)
	r := before.Stop()
	t.Logf("chat across the kill and the %s after: %d served, %d failed", fallbackBound, r.Served, r.Failed)
	after := loadgen.Start(f.proxy.base(), "chat", 4, 10)
	if !after.WaitServed(40, 60*time.Second) {
		t.Errorf("chat is not served after its lane died: %d failed", after.Failed())
	}
	ra := after.Stop()
	t.Logf("chat from %s after the kill on: %d served, %d failed", time.Since(killed).Round(time.Millisecond)-ra.Duration.Round(time.Millisecond), ra.Served, ra.Failed)
	if ra.Failed != 0 {
		t.Errorf("%d requests for chat failed after the fallback bound: %q", ra.Failed, ra.Errors)
	}
	// scribe answered them: HAProxy sent chat to lane_scribe.
	out, err := (Runtime{Dial: f.proxy.localDialer()}).Exec(t.Context(), "show", "stat")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "lane_scribe,BACKEND") {
		t.Errorf("show stat has no lane_scribe backend:\n%s", out)
	}
}
