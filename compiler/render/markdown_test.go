package render

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/compiler/place"
	"poolc.dev/poolc/compiler/plan"
	"poolc.dev/poolc/pools"
)

// bigPlan is the bring-up of a pool of n lanes: far more than a comment holds.
func bigPlan(t testing.TB, n int) *pools.Plan {
	p := &pools.Pool{Name: "big"}
	for i := range n / 10 {
		p.Nodes = append(p.Nodes, pools.Node{Name: fmt.Sprintf("node-%04d", i), Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250), MemoryGB: 512, Guard: pools.Guard{Ceiling: 0.9, ReserveGB: 8}})
	}
	p.Models = []pools.Model{{Name: "m", Path: "/m.gguf", SizeGB: 1, MemoryGB: 4}}
	for i := range n {
		name := fmt.Sprintf("lane-%05d", i)
		p.Lanes = append(p.Lanes, pools.Lane{Name: name, Model: "m", Residency: pools.KeepWarm, Placement: []string{p.Nodes[i%len(p.Nodes)].Name}, Port: 8000 + i})
		p.Aliases = append(p.Aliases, pools.Alias{Name: name, Lane: name})
	}
	res := place.Place(place.Input{Pool: p})
	pl, err := plan.Diff(plan.Input{Pool: p, Placement: res, Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func TestMarkdownIsCutToFitAComment(t *testing.T) {
	var b strings.Builder
	Markdown(&b, bigPlan(t, 2000))
	out := b.String()
	if len(out) > 65536 {
		t.Fatalf("markdown is %d characters, more than a comment holds", len(out))
	}
	for _, want := range []string{"**Plan: 200 prefetch, 2000 start, 2000 route", "more lines of the state diff cut to fit a comment", "</details>"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if strings.Count(out, "<details>") != strings.Count(out, "</details>") {
		t.Error("unbalanced <details>")
	}
	if strings.Count(out, "```") != 2 {
		t.Error("the diff's code fence is not closed")
	}
}

func TestMarkdownCutsStepsWhenTheDiffIsNotEnough(t *testing.T) {
	var b strings.Builder
	Markdown(&b, bigPlan(t, 6000))
	out := b.String()
	if len(out) > 65536 {
		t.Fatalf("markdown is %d characters", len(out))
	}
	if !strings.Contains(out, "more steps cut to fit a comment; run `poolc plan`") {
		t.Error("no note that steps were cut")
	}
}

func TestSmallPlansAreNotCut(t *testing.T) {
	var b strings.Builder
	Markdown(&b, bigPlan(t, 20))
	if strings.Contains(b.String(), "cut to fit") {
		t.Error("a small plan was cut")
	}
}
