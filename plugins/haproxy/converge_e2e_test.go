//go:build e2e

package haproxy

import (
	"fmt"
	mrand "math/rand"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/loadgen"
)

// convergeTrials is how many random changes
// TestE2EOnDemandLanesConvergeInOneApply makes after the bring-up: 20, as
// issue 22 asks (POOLC_CONVERGE_TRIALS sets fewer for a quick local run).
func convergeTrials(t *testing.T) int {
	if v, err := strconv.Atoi(os.Getenv("POOLC_CONVERGE_TRIALS")); err == nil && v > 0 {
		return v
	}
	return 20
}

// TestE2EOnDemandLanesConvergeInOneApply brings up, with the README's
// defaults (state_dir relative to each node's own home, the default
// parallelism), a fleet of three sshd nodes on 127.0.0.2-4 with two
// on-demand lanes on each, then makes random changes (a lane moves to
// another node, a lane is added, a lane is removed): each converges in
// one apply, the refreshed plan after it is empty, and every alias of
// the pool answers through HAProxy.
func TestE2EOnDemandLanesConvergeInOneApply(t *testing.T) {
	var all []extraLane
	nodeOf := map[int]int{}
	for i := 0; i < 8; i++ {
		node := i%3 + 1
		nodeOf[i] = node
		all = append(all, extraLane{name: fmt.Sprintf("od%d", i), residency: "on-demand",
			placement: fmt.Sprintf(`"n%d"`, node), aliases: []string{fmt.Sprintf("ask%d", i)}})
	}
	// The proxy has a backend for every lane that may come; the pool
	// starts with the first six (two per node).
	f := newFleetOf(t, fleetOpts{homes: true}, all...)
	present := map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true}
	write := func() {
		f.extra = nil
		for i, l := range all {
			if present[i] {
				f.extra = append(f.extra, l)
			}
		}
		f.writePool(`"n1", "n2"`)
	}
	served := func(when string) {
		t.Helper()
		for _, l := range f.extra {
			for _, a := range l.aliases {
				if err := loadgen.Chat(t.Context(), http.DefaultClient, f.proxy.base(), a, 3); err != nil {
					t.Fatalf("%s: alias %s of lane %s: %v", when, a, l.name, err)
				}
			}
		}
	}
	write()
	start := time.Now()
	f.apply()
	f.planIsEmpty("after the bring-up")
	served("after the bring-up")
	t.Logf("bring-up of %d on-demand lanes on 3 nodes: one apply, %s", len(f.extra), time.Since(start).Round(time.Millisecond))

	seed := time.Now().UnixNano()
	rng := mrand.New(mrand.NewSource(seed))
	t.Logf("seed %d", seed)
	trials := convergeTrials(t)
	start = time.Now()
	for trial := 1; trial <= trials; trial++ {
		i := rng.Intn(len(all))
		var what string
		switch kind := rng.Intn(3); {
		case !present[i]:
			present[i], what = true, "add "+all[i].name
		case kind == 0 && len(present) > 2:
			delete(present, i)
			what = "remove " + all[i].name
		default:
			node := (nodeOf[i]+rng.Intn(2))%3 + 1 // one of the two other nodes
			nodeOf[i] = node
			all[i].placement = fmt.Sprintf(`"n%d"`, node)
			what = fmt.Sprintf("move %s to n%d", all[i].name, node)
		}
		write()
		f.apply()
		f.planIsEmpty(fmt.Sprintf("trial %d (%s)", trial, what))
		served(fmt.Sprintf("trial %d (%s)", trial, what))
		t.Logf("trial %d: %s converged in one apply", trial, what)
	}
	t.Logf("%d random changes, each one apply: %s", trials, time.Since(start).Round(time.Millisecond))
}
