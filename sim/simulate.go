package sim

// run processes events until none is left: arrivals, faults, operator
// actions and ticks stop at the scenario's end; what is in flight then
// (services, loads, steps) runs to its end.
func (w *world) run() error {
	every := max(w.end/100, 1)
	for {
		e, ok := w.next()
		if !ok {
			break
		}
		if w.opt.Progress != nil && w.now >= w.progress && w.now <= w.end {
			w.opt.Progress(w.now, w.end)
			w.progress = (w.now/every + 1) * every
		}
		if err := w.handle(e); err != nil {
			return err
		}
	}
	w.gw.finish()
	if w.opt.Progress != nil {
		w.opt.Progress(w.end, w.end)
	}
	return nil
}

// handle carries out one event.
func (w *world) handle(e event) error {
	switch e.kind {
	case evArrival:
		w.gw.arrive(e.a)
	case evServiceDone:
		w.gw.serviceDone(e.a, e.b)
	case evLoadDone:
		w.adm.loadDone(e.a, e.b)
	case evConnectFailed:
		w.gw.connectFailed(e.a, e.b)
	case evColdTimeout:
		w.gw.coldTimeout(e.a, e.b)
	case evScenario:
		return w.op.event(w.sc.Events[e.a])
	case evFaultEnd:
		w.faults.end(e.a, e.b)
	case evTick:
		return w.ctl.tick()
	case evStepDone:
		w.exec.attemptEnded(stepRef{e.a, e.b, e.c})
	case evStepTimeout:
		w.exec.attemptTimedOut(stepRef{e.a, e.b, e.c})
	case evStepWake:
		w.exec.wake(e.a)
	}
	return nil
}

// result is what the run measured, with the timeline in time order.
func (w *world) result() *Result {
	return w.stats.result(w.end, w.events, w.fleet.final(w.routing.routes()))
}
