package cli

import (
	"encoding/json"
	"os"
	"slices"

	"github.com/rogpeppe/go-internal/testscript"
)

// dropLaneCmd is the testscript command `droplane WORLD LANE NODE`: it
// removes the lane process from a sim world file, as a lane that died (or
// that someone stopped by hand) leaves the hardware, so scripts can show
// what a refresh makes of drift.
func dropLaneCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: droplane WORLD LANE NODE")
	}
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	var world map[string]any
	ts.Check(json.Unmarshal(data, &world))
	fleet := world["fleet"].(map[string]any)
	lanes, _ := fleet["lanes"].([]any)
	kept := slices.DeleteFunc(slices.Clone(lanes), func(l any) bool {
		m := l.(map[string]any)
		return m["name"] == args[1] && m["node"] == args[2]
	})
	if len(kept) == len(lanes) {
		ts.Fatalf("%s has no lane %s on %s", args[0], args[1], args[2])
	}
	fleet["lanes"] = kept
	data, err = json.Marshal(world)
	ts.Check(err)
	ts.Check(os.WriteFile(path, data, 0o644))
}
