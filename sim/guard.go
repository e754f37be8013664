package sim

// guard is the memory guard's latches: a lane process whose load the
// guard aborted (admission.guardAbort) does not load again until an
// operator starts it or the process is registered anew.
type guard struct{ latches []bool }

// latched reports whether lane process i is latched; latch and unlatch
// set and clear that.
func (g *guard) latched(i int32) bool { return int(i) < len(g.latches) && g.latches[i] }

func (g *guard) latch(i int32) {
	for int(i) >= len(g.latches) {
		g.latches = append(g.latches, false)
	}
	g.latches[i] = true
}

func (g *guard) unlatch(i int32) {
	if int(i) < len(g.latches) {
		g.latches[i] = false
	}
}
