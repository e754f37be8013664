package cli

import (
	"errors"
	"slices"

	"github.com/rogpeppe/go-internal/testscript"

	"poolc.dev/poolc/plugins/simactuator"
	"poolc.dev/poolc/pools"
)

// dropLaneCmd is the testscript command `droplane WORLD LANE NODE`: it
// removes the lane process from a sim world (its file and journal), as a
// lane that died (or that someone stopped by hand) leaves the hardware,
// so scripts can show what a refresh makes of drift.
func dropLaneCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: droplane WORLD LANE NODE")
	}
	path := ts.MkAbs(args[0])
	world, log, err := simactuator.OpenWorld(path)
	ts.Check(err)
	lanes := world.Fleet.Lanes
	world.Fleet.Lanes = slices.DeleteFunc(slices.Clone(lanes), func(l pools.LaneState) bool {
		return l.Name == args[1] && l.Node == args[2]
	})
	if len(world.Fleet.Lanes) == len(lanes) {
		ts.Fatalf("%s has no lane %s on %s", args[0], args[1], args[2])
	}
	ts.Check(errors.Join(log.Snapshot(&world), log.Close()))
}
