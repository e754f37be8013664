package simactuator

import (
	"fmt"

	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/pools"
)

// The world is kept in a journal.Log: every change is appended to a
// journal beside the world file (the world file's name plus ".journal")
// and now and then the whole world is written as one compact snapshot.
// A step's Apply returns only once its changes are written to the
// journal (to the OS, at least), so a SIGKILL of the plugin loses no
// change of a step it reported; a change of a step it had not reported
// yet may be lost, and poolc's refresh sees that step's effect missing
// and plans it again. Applies in flight together share a journal write.

// change is one change to the world, as the journal records it; exactly
// one of its fields is set.
type change struct {
	// Attempt is the ID of a step an attempt of which began.
	Attempt string `json:"attempt,omitempty"`
	// Effect is a step that took effect, after Seconds simulated seconds.
	Effect  *pools.Step `json:"effect,omitempty"`
	Seconds float64     `json:"seconds,omitempty"`
	// Violation and Interruption are what the sim saw and recorded.
	Violation    string `json:"violation,omitempty"`
	Interruption string `json:"interruption,omitempty"`
}

// apply makes the change in the world: the one place a change is made,
// whether live or replayed from the journal.
func (w *World) apply(c change) error {
	switch {
	case c.Attempt != "":
		w.Attempts[c.Attempt]++
	case c.Effect != nil:
		if err := detailed(*c.Effect); err != nil {
			return err
		}
		if err := w.byNode().Apply(*c.Effect); err != nil {
			return err
		}
		if c.Effect.Kind == pools.StepStart {
			w.Starts[c.Effect.Lane.Name+"@"+c.Effect.Lane.Node]++
		}
		w.ClockSeconds += c.Seconds
	case c.Violation != "":
		w.Violations = append(w.Violations, c.Violation)
	case c.Interruption != "":
		w.Interruptions = append(w.Interruptions, c.Interruption)
	}
	return nil
}

// detailed checks that a step carries the detail its kind needs, as a
// step read back from a journal may not.
func detailed(s pools.Step) error {
	var ok bool
	switch s.Kind {
	case pools.StepPrefetch:
		ok = s.Prefetch != nil
	case pools.StepStart, pools.StepResidency, pools.StepDrain, pools.StepStop:
		ok = s.Lane != nil
	case pools.StepRoute:
		ok = s.Route != nil
	case pools.StepMemberEnsure, pools.StepImageSync, pools.StepMemberRemove:
		ok = s.Member != nil
	default:
		return fmt.Errorf("step %s: unknown step kind %q", s.ID, s.Kind)
	}
	if !ok {
		return fmt.Errorf("step %s: a %s step without its detail", s.ID, s.Kind)
	}
	return nil
}

// worldLog keeps a world in its file and journal.
type worldLog = journal.Log[World, change]

// OpenWorld reads the world kept at path (nothing at "": a new world) and
// returns it, settled, with the log that goes on writing its changes:
// the sim opens its world so, and tests and tools that inspect a world
// or change it by hand (Snapshot it, then Close the log) too. A log that
// recorded nothing holds no file open.
func OpenWorld(path string) (World, *worldLog, error) {
	var w World
	log, err := journal.OpenLog(path, &w, (*World).ready, (*World).apply)
	w.settle()
	if err != nil {
		return w, nil, fmt.Errorf("sim world %w", err)
	}
	return w, log, nil
}

// ready readies a world read from its file, or a new one, for changes.
func (w *World) ready() {
	if w.Starts == nil {
		w.Starts = map[string]int{}
	}
	if w.Attempts == nil {
		w.Attempts = map[string]int{}
	}
	w.Fleet.Normalize()
}

// record makes a change in the world and queues it for the journal; the
// caller holds s.mu, and calls s.commit once it has released it.
func (s *Sim) record(c change) error {
	if s.log == nil {
		return s.world.apply(c) // not configured: nothing to write to
	}
	return s.log.Record(&s.world, c)
}

// commit returns once every change recorded so far is written (or a
// snapshot of the world holding them is). The caller does not hold s.mu.
func (s *Sim) commit() error {
	s.mu.Lock()
	l := s.log
	s.mu.Unlock()
	if l == nil {
		return nil
	}
	return l.Commit(&s.mu, func() *World {
		s.world.settle()
		return &s.world
	})
}
