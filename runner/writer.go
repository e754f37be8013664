package runner

import (
	"sync"

	"poolc.dev/poolc/pools"
)

// stateWriter writes the state in the background whenever it changed:
// each write takes a fresh snapshot, so one write covers every step
// finished while the previous write was in progress, and a step costs no
// copy of the state.
type stateWriter struct {
	rec      Recorder
	snapshot func() *pools.State
	mu       sync.Mutex
	cond     *sync.Cond
	dirty    bool
	closing  bool
	done     chan struct{}
	lastErr  error
}

func newStateWriter(rec Recorder, snapshot func() *pools.State) *stateWriter {
	w := &stateWriter{rec: rec, snapshot: snapshot, done: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	go w.loop()
	return w
}

// changed says the state has changed since the last snapshot.
func (w *stateWriter) changed() {
	w.mu.Lock()
	w.dirty = true
	w.mu.Unlock()
	w.cond.Signal()
}

func (w *stateWriter) loop() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for !w.dirty && !w.closing {
			w.cond.Wait()
		}
		dirty, closing := w.dirty, w.closing
		w.dirty = false
		w.mu.Unlock()
		if dirty {
			err := w.rec.WriteState(w.snapshot())
			w.mu.Lock()
			w.lastErr = err
			w.mu.Unlock()
			continue
		}
		if closing {
			return
		}
	}
}

// close writes the last change and returns the last write's error.
func (w *stateWriter) close() error {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.cond.Signal()
	<-w.done
	return w.lastErr
}
