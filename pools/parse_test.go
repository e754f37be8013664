package pools_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/pools"
)

// sparkLabPlan is the bring-up plan of the example pool and the fleet it
// leads to, as documents: seeds for the parsers.
func sparkLabPlan(t testing.TB) (saved, state []byte) {
	t.Helper()
	cfg, diags := compiler.Load([]string{"../examples/spark-lab"})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	p, err := compiler.Plan(cfg, &pools.State{}, compiler.PlanOptions{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	saved, err = json.Marshal(pools.SavedPlan{FormatVersion: pools.SavedPlanFormatVersion, ConfigHash: cfg.Hash,
		StateLineage: pools.NoLineage, StateHash: (&pools.State{}).ContentHash(), Plan: p})
	if err != nil {
		t.Fatal(err)
	}
	st := pools.State{Lineage: "l", Serial: 3, Pool: cfg.Pool.Name, Fleet: p.After}
	state, err = st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return saved, state
}

func TestASavedPlanOfPoolcParses(t *testing.T) {
	saved, _ := sparkLabPlan(t)
	p, err := pools.ParseSavedPlan("plan.json", saved)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Plan.Steps) == 0 {
		t.Fatal("no steps")
	}
}

func TestAMalformedSavedPlanIsRefused(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"format_version":1,"plan":{"steps":[{"id":"x","kind":"start"}]}}`, "step x: a start step needs its lane with a name and a node"},
		{`{"format_version":1,"plan":{"steps":[{"id":"r","kind":"route","route":{"alias":"a","lane":"cloud"},"depends_on":["later"]},{"id":"later","kind":"prefetch","prefetch":{}}]}}`, `step r depends on "later", which is not an earlier step`},
		{`{"format_version":1,"plan":{"steps":[{"id":"x","kind":"explode"}]}}`, `step x: unknown kind "explode"`},
		{`{"format_version":1,"plan":{"steps":[{"id":"m","kind":"image-sync"}]}}`, "a image-sync step needs its member"},
		{`{"format_version":1,"plan":{"steps":[{"kind":"stop"}]}}`, "step 1 has no ID"},
		{`{"format_version":1,"plan":{"after":{"routes":[{"alias":"a","lane":"l","node":"n"}]}}}`, `the fleet after the plan: alias "a" routes to lane "l" on node "n", which the state does not hold`},
		{`{"format_version":3,"plan":{}}`, "newer than this poolc reads"},
		{`{"format_version":1,"plan":{}}`, "does not bind the plan to the state it was made from"},
		{`{"format_version":2,"state_lineage":"none","plan":{}}`, "does not bind the plan to the state it was made from"},
		{"{\"format_version\":1,\n\"plan\":[}", "plan.json:2:9: invalid character"},
		{`{"plan":{}}`, "not a saved plan: no format_version"},
	} {
		_, err := pools.ParseSavedPlan("plan.json", []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one with %q", c.doc, err, c.want)
		}
	}
}

// FuzzParseSavedPlan: no input panics, and a plan that parses comes back
// the same from its own JSON.
func FuzzParseSavedPlan(f *testing.F) {
	saved, _ := sparkLabPlan(f)
	f.Add(saved)
	f.Add([]byte(`{"format_version":1,"plan":{"steps":[{"id":"x","kind":"start","lane":{"name":"a","node":"b"}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := pools.ParseSavedPlan("fuzz.json", data)
		if err != nil {
			return
		}
		again, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := pools.ParseSavedPlan("again.json", again)
		if err != nil {
			t.Fatalf("a parsed plan does not parse again: %v", err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatal("a parsed plan changes when written and read again")
		}
	})
}

// FuzzParseState: no input panics, and a state that parses is written and
// read back unchanged.
func FuzzParseState(f *testing.F) {
	_, state := sparkLabPlan(f)
	f.Add(state)
	f.Add([]byte(`{"format_version":1,"lanes":[{"name":"a","node":"b"}],"routes":[{"alias":"x","lane":"a","node":"b"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := pools.ParseState("fuzz.json", data)
		if err != nil {
			return
		}
		again, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		r, err := pools.ParseState("again.json", again)
		if err != nil {
			t.Fatalf("a parsed state does not parse again: %v\n%s", err, again)
		}
		if !reflect.DeepEqual(s, r) {
			t.Fatalf("a parsed state changes when written and read again:\n%s", again)
		}
	})
}
