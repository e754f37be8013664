package runner

import "time"

// EventKind names what an Event reports.
type EventKind string

// The kinds of events a run emits.
const (
	EventStarted   EventKind = "started"
	EventProgress  EventKind = "progress"
	EventRetry     EventKind = "retry"
	EventDone      EventKind = "done"
	EventFailed    EventKind = "failed"
	EventSkipped   EventKind = "skipped"
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
