//go:build e2e

package haproxy

import (
	"net/http"
	"testing"

	"poolc.dev/poolc/internal/testing/loadgen"
	"poolc.dev/poolc/plugins/llama"
)

// sparkLabLanes make the fleet's pool more like examples/spark-lab: beside
// cognition (n1, else n2) and scribe (n3), a keep-warm lane with two
// aliases, a preferred one, and an on-demand lane on each of two nodes,
// so routers and lanes of their own share nodes.
var sparkLabLanes = []extraLane{
	{name: "coder", residency: "keep-warm", placement: `"n2"`, aliases: []string{"code", "complete"}},
	{name: "embed", residency: "preferred", placement: `"n1"`, aliases: []string{"embed"}},
	{name: "vision", residency: "on-demand", placement: `"n2"`, aliases: []string{"draw"}},
	{name: "music", residency: "on-demand", placement: `"n3"`, aliases: []string{"music"}},
}

// TestE2EApplyBringsUpASparkLabLikePoolAndMovesALaneUnderLoad: poolc
// apply brings up six lanes on three nodes, two of them models of their
// nodes' routers, and a refreshed plan is empty; every alias answers
// through HAProxy (the on-demand ones load on that first request), after
// which the plan is still empty. Then cognition moves from n1 to n2,
// where coder runs and the router serves vision, while load generators
// stream chat completions for chat, code and draw: not one request fails
// or is cut, and the plan is empty again.
func TestE2EApplyBringsUpASparkLabLikePoolAndMovesALaneUnderLoad(t *testing.T) {
	f := newFleet(t, sparkLabLanes...)
	f.writePool(`"n1", "n2"`)
	f.outputNames(f.apply(), "start:cognition@n1", "start:scribe@n3", "start:coder@n2", "start:embed@n1", "start:vision@n2", "start:music@n3")
	f.planIsEmpty("after the bring-up")
	pids := f.lanePIDs()
	for _, want := range []string{"n1/cognition", "n1/embed", "n2/coder", "n2/" + llama.RouterLane, "n3/scribe", "n3/" + llama.RouterLane} {
		if pids[want] == 0 {
			t.Errorf("no live process %s: %v", want, pids)
		}
	}
	if len(pids) != 6 {
		t.Errorf("lane processes %v; want 6 (four lanes of their own, two routers)", pids)
	}
	for _, alias := range []string{"chat", "notes", "code", "complete", "embed", "draw", "music"} {
		if err := loadgen.Chat(t.Context(), http.DefaultClient, f.proxy.base(), alias, 3); err != nil {
			t.Errorf("%s through HAProxy: %v", alias, err)
		}
	}
	if got := f.routerStates(1); got != "vision=loaded" {
		t.Errorf("n2's router after a request for draw: %s", got)
	}
	f.planIsEmpty("after every alias answered")

	f.applyUnderLoad("cognition's move from n1 to n2", 3, []string{"chat", "code", "draw"}, func() { f.writePool(`"n2", "n1"`) })
	if pids := f.lanePIDs(); pids["n2/cognition"] == 0 || pids["n1/cognition"] != 0 {
		t.Errorf("after the move, lane processes %v", pids)
	}
	f.planIsEmpty("after the move")
}
