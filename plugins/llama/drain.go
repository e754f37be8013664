package llama

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"poolc.dev/poolc/internal/plural"
)

// DrainTimeoutError is a lane still busy, or not known to be idle, when
// the drain timeout passed. Last is what the drain saw last.
type DrainTimeoutError struct {
	Lane    string
	Last    string
	Timeout time.Duration
}

// Error implements error.
func (e *DrainTimeoutError) Error() string {
	return fmt.Sprintf("lane %s is not idle after %s (last seen: %s)", e.Lane, e.Timeout, e.Last)
}

// drainer waits for a lane's requests to finish: its own process's, a
// router's (the sum of its models') or one model's of a router, probing
// /slots and /metrics within DrainTimeout; a probe that says nothing is
// busy, unknown, unless the lane's process is known gone or told to stop.
type drainer struct {
	*session
	procs *processes
}

// drain carries out Node.Drain.
func (d *drainer) drain(ctx context.Context, l Lane, progress Progress) error {
	if err := l.Validate(); err != nil {
		return err
	}
	busy := d.prober(l).busy
	if l.Name == RouterLane {
		busy = func(ctx context.Context) (int, error) { return d.routerBusy(ctx, l) }
	}
	return d.drainProbe(ctx, l, l.Name, busy, progress)
}

// routerModel waits until model name of the router rl processes and
// holds back no request, as Node.DrainRouterModel says.
func (d *drainer) routerModel(ctx context.Context, rl Lane, name string, progress Progress) error {
	return d.drainProbe(ctx, rl, name, d.modelBusy(rl, name), progress)
}

// modelBusy is the probe of model name of router rl: with autoload=false,
// so that it loads nothing, and errNotLoaded (that model alone) as 0.
func (d *drainer) modelBusy(rl Lane, name string) func(context.Context) (int, error) {
	p := d.prober(rl).withQuery("model=" + url.QueryEscape(name) + "&autoload=false")
	return func(ctx context.Context) (int, error) {
		b, err := p.busy(ctx)
		if errors.Is(err, errNotLoaded) {
			return 0, nil
		}
		return b, err
	}
}

// routerBusy sums the probes of the router's models that GET /models
// reports loaded or loading; any of them unknown is unknown.
func (d *drainer) routerBusy(ctx context.Context, rl Lane) (int, error) {
	states, err := d.prober(rl).routerModels(ctx)
	if err != nil {
		return 0, err
	}
	sum := 0
	for _, s := range states {
		if s.State != "loaded" && s.State != "loading" {
			continue
		}
		b, err := d.modelBusy(rl, s.Name)(ctx)
		if err != nil {
			return 0, fmt.Errorf("model %s: %w", s.Name, err)
		}
		sum += b
	}
	return sum, nil
}

// drainProbe polls busy until it answers 0, the process of proc (the lane
// whose pidfile holds it) is gone or no longer listens, or DrainTimeout
// passes. An error of
// busy is "busy, unknown": the drain goes on. Each change of what it
// sees is reported through progress, and the last is in the timeout's
// error.
func (d *drainer) drainProbe(ctx context.Context, proc Lane, name string, busy func(context.Context) (int, error), progress Progress) error {
	ctx2, cancel := context.WithTimeout(ctx, d.set.DrainTimeout)
	defer cancel()
	say := func(msg string) {
		if progress != nil {
			progress(fmt.Sprintf("lane %s: %s", name, msg))
		}
	}
	last := "no answer yet"
	for {
		b, err := busy(ctx2)
		seen := ""
		switch {
		case err == nil && b == 0:
			say("nothing in flight")
			return nil
		case err == nil:
			seen = plural.Count(b, "request") + " in flight"
		case ctx.Err() != nil:
			return ctx.Err()
		case ctx2.Err() != nil:
			// A probe cut by the drain timeout tells nothing new.
		default:
			if why := d.unreachable(ctx2, proc); why != "" {
				say(fmt.Sprintf("%s, so nothing is in flight (the probe: %v)", why, err))
				return nil
			}
			seen = "busy, unknown: " + err.Error()
		}
		if seen != "" && seen != last {
			say(seen)
			last = seen
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ctx2.Done():
			return &DrainTimeoutError{Lane: name, Last: last, Timeout: d.set.DrainTimeout}
		case <-time.After(d.set.Poll):
		}
	}
}

// unreachable says why no request can be in flight on the process of
// lane l, whose probe failed: its pidfile names a process that is gone,
// or the lane's own server, alive, that no longer listens on its port
// (told to stop: llama-server closes its port at once on SIGTERM and cuts
// what it served). "" when neither is known: no pidfile, a status that
// cannot be read, a process that listens or a port another holds.
func (d *drainer) unreachable(ctx context.Context, l Lane) string {
	st, err := d.procs.status(ctx)
	if err != nil {
		return ""
	}
	r, ok := st.lane(l)
	switch {
	case !ok:
		return ""
	case !r.alive:
		return "its process is gone"
	case !r.isLane(l):
		return ""
	}
	id, err := d.procs.identity(ctx, r.pid, l)
	if err != nil || !id.alive || id.listening || id.unseen {
		return ""
	}
	return fmt.Sprintf("its process (pid %d) no longer listens on port %d", r.pid, l.Port)
}
