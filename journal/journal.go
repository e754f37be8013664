// Package journal is poolc's one write-ahead journal: records appended
// as JSON lines by group commit (Appender), read back whole lines only, a
// torn last line dropped (Lines), replayed onto the last snapshot, and
// folded into the snapshot when they are all in it.
//
// It keeps two things that way. The state store's journal holds the
// records of an apply (Record, read back as Records, which say what an
// interrupted apply left and which finished steps a snapshot does not
// hold yet) behind the Writer every state backend implements: File, the
// journal of one apply in a file beside the state file (Beside), whose
// snapshots are the state files a SaveFunc writes and announces by
// lineage and serial; the etcd backend (package etcdjournal) keeps the
// same records as keys. Log keeps any other value (the sim actuator's
// world) as a snapshot file and a journal of numbered changes beside it,
// snapshotted when the journal outgrows the snapshot.
package journal

import (
	"encoding/json"
	"fmt"
	"time"

	"poolc.dev/poolc/pools"
)

// Event is what a journal record says happened.
type Event string

// The journal events. An apply's records start with ApplyStarted and, when
// it was not killed, end with ApplyEnded. Snapshot announces a state
// written during the apply.
const (
	// ApplyStarted is an apply's first record.
	ApplyStarted Event = "apply-started"
	// StepStarted records that an attempt of a step began.
	StepStarted Event = "started"
	// StepFinished records that a step succeeded.
	StepFinished Event = "finished"
	// StepFailed records that a step failed for good.
	StepFailed Event = "failed"
	// StepSkipped records that a step was not run because a step it
	// depends on did not succeed.
	StepSkipped Event = "skipped"
	// StepCancelled records that a step was cancelled before its next
	// attempt began.
	StepCancelled Event = "cancelled"
	// Snapshot announces a state written during the apply.
	Snapshot Event = "snapshot"
	// ApplyEnded is the last record of an apply that was not killed.
	ApplyEnded Event = "apply-ended"
)

// Record is one record of the journal.
type Record struct {
	Time    time.Time `json:"time"`
	Apply   string    `json:"apply"`
	Event   Event     `json:"event"`
	Step    string    `json:"step,omitempty"`
	Message string    `json:"message,omitempty"`
	// Effect is, on a StepFinished record, the step as the state records
	// it: what a read replays when no snapshot holds it yet.
	Effect *pools.Step `json:"effect,omitempty"`
	// Lineage and Serial name a state, on ApplyStarted (the state the
	// apply started from) and Snapshot records; Finished is how many of
	// the apply's StepFinished records that state holds.
	Lineage  string `json:"lineage,omitempty"`
	Serial   int64  `json:"serial,omitempty"`
	Finished int    `json:"finished,omitempty"`
}

// Encode stamps r with the time and the apply's ID and returns its JSON,
// as every backend stores it.
func Encode(apply string, r Record) ([]byte, error) {
	r.Time, r.Apply = time.Now().UTC(), apply
	return json.Marshal(r)
}

// Decode reads a record from its JSON.
func Decode(data []byte) (Record, error) {
	var r Record
	err := json.Unmarshal(data, &r)
	return r, err
}

// Writer appends the records of one apply and writes the state snapshots
// it announces; each state backend has one.
type Writer interface {
	// Append appends r, stamped with the time and the apply's ID; the
	// record is stored when Append returns.
	Append(r Record) error
	// Snapshot stores st as the next serial of its lineage, announced as
	// holding the effects of the first finished records of the apply.
	Snapshot(st *pools.State, finished int) error
	// End records the end of the apply.
	End(message string) error
}

// Queuer is a Writer that can queue a record in its place at once and
// store it later, with the records queued meanwhile: Queue never waits
// for the store, and the wait it returns returns once the record is
// stored, with the error that kept it from being stored. A caller that
// must order its records against its own state queues them under its
// lock and waits outside it.
type Queuer interface {
	Queue(r Record) (wait func() error)
}

// Interrupted describes an apply that did not end: its ID, the steps it
// had started but not finished and, for each, the plugin it was sent to
// (the message of its StepStarted record).
type Interrupted struct {
	Apply    string
	InFlight []string
	Plugin   map[string]string
}

// Records are the records of the last apply, oldest first, as a backend
// read them back (records of earlier applies before it are ignored).
type Records []Record

// scan is what the records say about the last apply.
type scan struct {
	apply   string
	ended   bool
	effects []pools.Step // the effects of its finished steps, in order
	marks   []Record     // its ApplyStarted and Snapshot records
	open    map[string]bool
	order   []string          // steps in the order they first started
	plugin  map[string]string // the plugin of each started step
}

func (rs Records) scan() *scan {
	s := &scan{open: map[string]bool{}}
	for _, r := range rs {
		s.add(r)
	}
	return s
}

// add folds the next record into the scan.
func (s *scan) add(r Record) {
	switch r.Event {
	case ApplyStarted:
		*s = scan{apply: r.Apply, open: map[string]bool{}, marks: []Record{r}}
	case ApplyEnded:
		s.ended = true
	case Snapshot:
		s.marks = append(s.marks, r)
	case StepStarted:
		if !s.open[r.Step] {
			s.order = append(s.order, r.Step)
		}
		s.open[r.Step] = true
		if s.plugin == nil {
			s.plugin = map[string]string{}
		}
		s.plugin[r.Step] = r.Message
	case StepFinished:
		if r.Effect != nil {
			s.effects = append(s.effects, *r.Effect)
		}
		delete(s.open, r.Step)
	default:
		delete(s.open, r.Step)
	}
}

// Apply is the ID of the last apply, "" when there is none.
func (rs Records) Apply() string { return rs.scan().apply }

// Replay applies to st the effects of the steps the records say finished
// after the last snapshot of st's lineage and serial, and returns how
// many it applied; where names the journal in errors. When no record
// names that state, it is not one the last apply wrote (it was written
// since), and nothing is replayed.
func (rs Records) Replay(st *pools.State, where string) (int, error) {
	s := rs.scan()
	var after []pools.Step
	for i := len(s.marks) - 1; i >= 0; i-- {
		if m := s.marks[i]; m.Lineage == st.Lineage && m.Serial == st.Serial {
			after = s.effects[min(m.Finished, len(s.effects)):]
			break
		}
	}
	if err := st.Fleet.ApplyAll(after); err != nil {
		return 0, fmt.Errorf("%s: replaying a finished step onto state serial %d: %w", where, st.Serial, err)
	}
	return len(after), nil
}

// Finished is how many StepFinished records with an effect the last apply
// journaled: what a snapshot holding all of them announces.
func (rs Records) Finished() int { return len(rs.scan().effects) }

// Interrupted is the last apply if it did not end, or nil.
func (rs Records) Interrupted() *Interrupted {
	s := rs.scan()
	if s.apply == "" || s.ended {
		return nil
	}
	last := &Interrupted{Apply: s.apply, Plugin: map[string]string{}}
	for _, id := range s.order {
		if s.open[id] {
			last.InFlight = append(last.InFlight, id)
			last.Plugin[id] = s.plugin[id]
		}
	}
	return last
}
