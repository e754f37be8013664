package pools_test

import (
	"reflect"
	"testing"
	"time"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/pools"
)

// sparkLabState is the fleet the example pool's bring-up leads to, as a
// state document: a seed for the parser.
func sparkLabState(t testing.TB) []byte {
	t.Helper()
	cfg, diags := compiler.Load([]string{"../examples/spark-lab"})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	p, err := compiler.Plan(cfg, &pools.State{}, compiler.PlanOptions{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	st := pools.State{Lineage: "l", Serial: 3, Pool: cfg.Pool.Name, Fleet: p.After}
	state, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// FuzzParseState: no input panics, and a state that parses is written and
// read back unchanged.
func FuzzParseState(f *testing.F) {
	f.Add(sparkLabState(f))
	f.Add([]byte(`{"format_version":1,"lanes":[{"name":"a","node":"b"}],"routes":[{"alias":"x","lane":"a","node":"b"}]}`))
	f.Add([]byte(crossing(true)))
	f.Add([]byte(crossing(false)))
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
