package runner

import (
	"sync"

	"poolc.dev/poolc/pools"
)

// stateWriter writes states in the background, always the newest: a
// state handed over while a write is in progress replaces any state still
// waiting, so one write covers every step finished in the meantime.
type stateWriter struct {
	rec     Recorder
	mu      sync.Mutex
	cond    *sync.Cond
	pending *pools.State
	closing bool
	done    chan struct{}
	lastErr error
}

func newStateWriter(rec Recorder) *stateWriter {
	w := &stateWriter{rec: rec, done: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	go w.loop()
	return w
}

func (w *stateWriter) put(st *pools.State) {
	w.mu.Lock()
	w.pending = st
	w.mu.Unlock()
	w.cond.Signal()
}

func (w *stateWriter) loop() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for w.pending == nil && !w.closing {
			w.cond.Wait()
		}
		st := w.pending
		w.pending = nil
		closing := w.closing
		w.mu.Unlock()
		if st != nil {
			err := w.rec.WriteState(st)
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

// close writes the last pending state and returns the last write's error.
func (w *stateWriter) close() error {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.cond.Signal()
	<-w.done
	return w.lastErr
}
