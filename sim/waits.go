package sim

// waits are the plan steps waiting for lane processes' loads, and which
// loads a plan asked for (GBLoadedByPlans counts those, GBReloaded the
// others).
type waits struct {
	steps loads
	procs []planWait // by lane process
}

// planWait is what waits for one lane process's load.
type planWait struct {
	onLoad  []stepRef
	forPlan bool
}

func (w *waits) of(i int32) *planWait {
	for int(i) >= len(w.procs) {
		w.procs = append(w.procs, planWait{})
	}
	return &w.procs[i]
}

// add makes a plan step wait for lane process i's load; plan marks its
// next load as a plan's doing or not; planned reports whether it is, and
// clears the mark, as the load begins; none reports whether no step
// waits for it.
func (w *waits) add(i int32, ref stepRef) { p := w.of(i); p.onLoad = append(p.onLoad, ref) }
func (w *waits) plan(i int32, yes bool)   { w.of(i).forPlan = yes }
func (w *waits) none(i int32) bool        { return len(w.of(i).onLoad) == 0 }

func (w *waits) planned(i int32) bool {
	p := w.of(i)
	yes := p.forPlan
	p.forPlan = false
	return yes
}

// end ends the steps waiting for lane process i's load: failed (why)
// unless ok.
func (w *waits) end(i int32, ok bool, why string) {
	p := w.of(i)
	refs := p.onLoad
	p.onLoad = nil
	p.forPlan = false
	for _, ref := range refs {
		w.steps.loadEnded(ref, ok, why)
	}
}
