package store

import (
	"context"
	"fmt"
	"time"

	"poolc.dev/poolc/pools"
)

// CopyRequest asks to copy a pool's state from one backend to another,
// keeping its lineage (state push, state pull --out).
type CopyRequest struct {
	From, To Backend
	// Pool is the pool whose state is copied; the copy is stamped with it.
	Pool string
	// Operation and Version go into both locks' info and the
	// destination's journal.
	Operation, Version string
	// LockTimeout is how long to wait for each lock.
	LockTimeout time.Duration
	// Force copies over a state of another lineage or a later serial.
	Force bool
}

// Copied says what a copy did: the state's lineage and serial in the
// source, and its serial in the destination (never below the one it
// replaced).
type Copied struct {
	Lineage          string
	Serial, ToSerial int64
}

// Copy copies the state, both backends locked, refusing to replace a
// state of another lineage or a later serial (mayReplace) unless Force.
// The destination's journal restarts with a line saying where its state
// came from.
func Copy(req CopyRequest) (*Copied, error) {
	from, to := req.From, req.To
	if from.String() == to.String() {
		return nil, fmt.Errorf("%s is both the source and the destination: the pool's state block must name another backend", from)
	}
	for _, b := range []Backend{from, to} {
		ctx, cancel := context.WithTimeout(context.Background(), req.LockTimeout)
		l, err := b.Acquire(ctx, NewLockInfo(req.Operation, req.Version), nil)
		cancel()
		if err != nil {
			return nil, err
		}
		defer l.Unlock()
	}
	st, err := ReadPool(from, req.Pool)
	if err != nil {
		return nil, err
	}
	if st.Serial == 0 && st.Lineage == "" {
		return nil, fmt.Errorf("%s holds no state", from)
	}
	was, err := ReadPool(to, req.Pool)
	if err != nil {
		return nil, err
	}
	if err := mayReplace(was, st, to); err != nil && !req.Force {
		return nil, fmt.Errorf("%w; pass --force to replace it", err)
	}
	c := &Copied{Lineage: st.Lineage, Serial: st.Serial}
	st.Pool = req.Pool
	st.Serial = max(st.Serial, was.Serial)
	if err := to.Write(st); err != nil {
		return nil, err
	}
	// The destination's journal is of the state replaced: start one that
	// says where this state came from.
	j, err := to.BeginJournal(NewID())
	if err == nil {
		err = j.End(fmt.Sprintf("%s from %s (lineage %s, serial %d)", req.Operation, from, c.Lineage, c.Serial))
	}
	if err != nil {
		return nil, err
	}
	c.ToSerial = st.Serial
	return c, nil
}

// mayReplace says why st should not replace was in to: another lineage,
// or the same lineage further on. Nil means it may.
func mayReplace(was, st *pools.State, to Backend) error {
	switch {
	case was.Lineage == "" && was.Serial == 0:
		return nil
	case was.Lineage != st.Lineage:
		return fmt.Errorf("%s holds a state of another lineage (%s, serial %d)", to, was.Lineage, was.Serial)
	case was.Serial > st.Serial:
		return fmt.Errorf("%s holds a later state of the same lineage (serial %d > %d): copying would go back", to, was.Serial, st.Serial)
	}
	return nil
}
