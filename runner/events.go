package runner

import "time"

// EventKind names what an Event reports.
type EventKind string

// The kinds of events a run emits.
const (
	// EventStarted reports that an attempt of a step began.
	EventStarted EventKind = "started"
	// EventProgress carries a plugin's progress report on a step.
	EventProgress EventKind = "progress"
	// EventRetry reports that a failed attempt will be tried again.
	EventRetry EventKind = "retry"
	// EventDone reports that a step succeeded.
	EventDone EventKind = "done"
	// EventFailed reports that a step failed for good.
	EventFailed EventKind = "failed"
	// EventSkipped reports that a step was skipped because a step it
	// depends on did not succeed.
	EventSkipped EventKind = "skipped"
	// EventCancelled reports that a step was cancelled before its next
	// attempt began.
	EventCancelled EventKind = "cancelled"
)

// Event is one thing that happened during a run, for progress displays
// and the --json event stream.
type Event struct {
	Time     time.Time `json:"time"`
	Kind     EventKind `json:"event"`
	Step     string    `json:"step"`
	Plugin   string    `json:"plugin,omitempty"`
	Message  string    `json:"message,omitempty"`
	Fraction float64   `json:"fraction,omitempty"`
	// BytesDone and BytesTotal are a progress report's bytes moved so far
	// and to move in all, when the step counts them (image-sync).
	BytesDone  int64         `json:"bytes_done,omitempty"`
	BytesTotal int64         `json:"bytes_total,omitempty"`
	Attempt    int           `json:"attempt,omitempty"`
	Estimate   float64       `json:"estimate_seconds,omitempty"`
	Elapsed    time.Duration `json:"elapsed_ns,omitempty"`
}
