//go:build e2e

package haproxy

import (
	"regexp"
	"strings"
	"testing"

	"poolc.dev/poolc/plugins/llama"
)

// TestE2EApplyChangesAResidencyAcrossOnDemandUnderLoad is a residency
// change through poolc, both ways: the pool makes lane cognition
// on-demand, then keep-warm again, and each time poolc apply starts the
// lane as it will be (a model of n1's router, or its own process), routes
// chat there, then drains and stops the lane as it was, while the load
// generator streams chat completions for its alias through HAProxy. Not
// one request fails or is cut, the new process serves the alias, the old
// one is gone, and a refreshed plan is empty.
func TestE2EApplyChangesAResidencyAcrossOnDemandUnderLoad(t *testing.T) {
	f := newFleet(t)
	f.writePool(`"n1", "n2"`)
	f.apply()
	f.planIsEmpty("after the bring-up")

	f.residencyUnderLoad("on-demand")
	if pids := f.lanePIDs(); pids["n1/cognition"] != 0 || pids["n1/"+llama.RouterLane] == 0 {
		t.Errorf("on demand, lane processes %v; want n1's router and no process of cognition's own", pids)
	}
	if n := f.laneProcesses()[joinHostPort(f.nodes[0].Host, f.port("cognition"))]; n != 0 {
		t.Errorf("on demand, %d processes still listen on cognition's own port on n1", n)
	}
	if got := f.routerStates(0); got != "cognition=loaded" {
		t.Errorf("n1's router after serving chat's traffic: %s; want cognition=loaded", got)
	}
	f.checkRoute("chat", f.routerPort)

	f.residencyUnderLoad("keep-warm")
	if pids := f.lanePIDs(); pids["n1/cognition"] == 0 || pids["n1/"+llama.RouterLane] != 0 {
		t.Errorf("back to keep-warm, lane processes %v; want cognition's own and no router (it has no model left)", pids)
	}
	if n := f.laneProcesses()[joinHostPort(f.nodes[0].Host, f.routerPort)]; n != 0 {
		t.Errorf("back to keep-warm, %d processes listen on n1's router port", n)
	}
	f.checkRoute("chat", f.port("cognition"))
}

// residencyUnderLoad makes cognition's residency res in the pool and
// applies it while the load generator streams chat completions for chat,
// then checks that no request failed, that apply ran the make-before-break
// steps, and that a refreshed plan is empty.
func (f *fleet) residencyUnderLoad(res string) {
	t := f.t
	t.Helper()
	out := f.applyUnderLoad("the change to "+res, 6, []string{"chat"}, func() {
		f.residency["cognition"] = res
		f.writePool(`"n1", "n2"`)
	}, "start:cognition@n1", "route:chat", "drain:cognition@n1", "stop:cognition@n1")
	// Make before break: the lane as it was drains only once chat
	// reaches the lane as it is.
	routed, drains := routeDone.FindStringIndex(out), drainStarted.FindStringIndex(out)
	if routed == nil || drains == nil || drains[0] < routed[0] {
		t.Errorf("the drain of cognition as it was started before chat was routed to it as it is:\n%s", out)
	}
	f.planIsEmpty("after the change to " + res)
	want := "route chat -> cognition@n1\n"
	if res == "on-demand" {
		want = "route chat -> cognition@n1 via router\n"
	}
	if st, code := f.run("state", "show", "pool.hcl"); code != 0 || !strings.Contains(st, want) {
		t.Errorf("poolc state show (exit %d) lacks %q:\n%s", code, want, st)
	}
}

var (
	routeDone    = regexp.MustCompile(`\] +done +route:chat `)
	drainStarted = regexp.MustCompile(`\] +started +drain:cognition@n1 `)
)

// checkRoute asserts that HAProxy sends alias to n1 at port, and nowhere
// else.
func (f *fleet) checkRoute(alias string, port int) {
	f.t.Helper()
	obs, err := f.proxy.gateway(f.t).Observe(f.t.Context())
	if err != nil {
		f.t.Fatal(err)
	}
	for _, o := range obs {
		if o.Alias == alias && (len(o.Endpoints) != 1 || o.Endpoints[0].Addr != f.nodes[0].Host || o.Endpoints[0].Port != port) {
			f.t.Errorf("HAProxy sends %s to %+v; want n1 (%s) at port %d", alias, o.Endpoints, f.nodes[0].Host, port)
		}
	}
}
