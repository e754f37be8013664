package sim_test

import (
	"reflect"
	"testing"

	"poolc.dev/poolc/sim"
	"poolc.dev/poolc/sim/scenario"
)

// The schema's defaults (schema/scenario.cue), which a scenario file is
// read with, are the one source of a scenario's defaults: the simulator's
// own for a scenario built in Go must be the same.
func TestTheSimulatorsDefaultsAreTheSchemas(t *testing.T) {
	f, diags := scenario.Read("s.hcl", []byte(`scenario "s" {
  demand "chat" {
    rate_per_minute = 6
  }
}`))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	built := sim.WithDefaults(sim.Scenario{Name: "s", Demand: []sim.Demand{{Alias: "chat", RatePerMinute: 6}}})
	read := sim.WithDefaults(f.Scenario)
	if !reflect.DeepEqual(built, read) {
		t.Errorf("a scenario built in Go gets other defaults than one read from a file:\nbuilt %+v\nread  %+v", built, read)
	}
}
