package runner

import (
	"context"
	"errors"
	"sync"
	"time"

	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/pools"
)

// recording owns the state of a run and records it: every step event in
// the journal as it happens, each finished step with its effect, and the
// state itself as a snapshot taken in the background, at most once per
// interval (or snapshotSpacing times the last snapshot's cost, when that
// is longer), at once when the run is cancelled, and always at the end.
// Between snapshots the journal holds what a kill would otherwise lose.
type recording struct {
	rec      Recorder
	stop     context.CancelCauseFunc
	interval time.Duration

	mu sync.Mutex // guards fleet and effects, and orders the journal's finished records as the fleet applies them
	// state is the state the run started from but its fleet, which is
	// kept split by node, so that a finished step costs the same at
	// any size of fleet; a snapshot joins it back.
	state   pools.State
	fleet   *pools.ByNode
	effects int // effects journaled, all of them in fleet

	errMu      sync.Mutex
	journalErr error // the first journal write that failed
	stateErr   error // the last snapshot's error

	kick    chan struct{} // the state changed
	closing chan struct{}
	done    chan struct{}
}

// newRecording starts recording a run from st. A journal write that fails
// calls stop: a run whose outcomes cannot be journaled must not go on.
func newRecording(ctx context.Context, stop context.CancelCauseFunc, rec Recorder, st *pools.State, interval time.Duration) *recording {
	w := &recording{rec: rec, stop: stop, interval: interval, state: *st, fleet: pools.SplitByNode(st.Fleet),
		kick: make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{})}
	w.state.Fleet = pools.Fleet{}
	go w.loop(ctx)
	return w
}

// Journal appends a step event to the journal.
func (w *recording) Journal(ev journal.Event, step, message string) {
	w.journal(journal.Record{Event: ev, Step: step, Message: message})
}

func (w *recording) journal(r journal.Record) { w.check(w.rec.Journal(r)()) }

// check stops the run when a journal write failed.
func (w *recording) check(err error) {
	if err != nil {
		w.errMu.Lock()
		if w.journalErr == nil {
			w.journalErr = err
		}
		w.errMu.Unlock()
		w.stop(err)
	}
}

// finished records a step that finished: its effect in the state and, in
// the same order, in the journal. An error says the state could not take
// the effect; the step is journaled as finished without it.
func (w *recording) finished(s pools.Step) error {
	w.mu.Lock()
	err := w.fleet.Apply(s)
	r := journal.Record{Event: journal.StepFinished, Step: s.ID}
	if err == nil {
		r.Effect = &s
		w.effects++
	}
	wait := w.rec.Journal(r)
	w.mu.Unlock()
	w.check(wait())
	if err == nil {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return err
}

// snapshot copies the state and says how many journaled effects it holds.
func (w *recording) snapshot() (*pools.State, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.state
	c.Fleet = w.fleet.Fleet()
	return &c, w.effects
}

// snapshotSpacing is how many times its own cost a snapshot waits after
// the last: snapshots of a large state (34 MB at 100,000 lanes, 0.3 s)
// take at most a twentieth of an apply's time.
const snapshotSpacing = 20

func (w *recording) loop(ctx context.Context) {
	defer close(w.done)
	last := time.Now() // the state the run starts from is on disk
	var cost time.Duration
	pending := false
	cancelled := ctx.Done()
	write := func() {
		begin := time.Now()
		st, n := w.snapshot()
		err := w.rec.WriteState(st, n)
		last, cost, pending = begin, time.Since(begin), false
		w.errMu.Lock()
		w.stateErr = err
		w.errMu.Unlock()
	}
	for {
		var due <-chan time.Time
		var timer *time.Timer
		if pending {
			wait := time.Until(last.Add(max(w.interval, snapshotSpacing*cost)))
			if wait <= 0 || ctx.Err() != nil {
				write()
				continue
			}
			timer = time.NewTimer(wait)
			due = timer.C
		}
		select {
		case <-w.kick:
			pending = true
		case <-due:
		case <-cancelled:
			cancelled = nil // from now on, pending changes are written at once
		case <-w.closing:
			if timer != nil {
				timer.Stop()
			}
			select {
			case <-w.kick:
				pending = true
			default:
			}
			if pending {
				write()
			}
			return
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// close writes the last snapshot and returns what failed: the first
// journal write, or the last snapshot.
func (w *recording) close() error {
	close(w.closing)
	<-w.done
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return errors.Join(w.journalErr, w.stateErr)
}
