package views

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
)

// Progress shows a run as it goes: Event shows one of the runner's
// events, Close ends the display.
type Progress interface {
	Event(e runner.Event)
	Close()
}

// NewProgress picks the display of a run of total steps: a JSON event per
// line for machines, live bars on a terminal, one line per event
// otherwise (CI logs).
func NewProgress(w io.Writer, asJSON, terminal bool, total int) Progress {
	switch {
	case asJSON:
		return &jsonProgress{enc: json.NewEncoder(w), total: total, start: time.Now()}
	case terminal:
		return newLiveProgress(w, total)
	}
	return &lineProgress{w: w, total: total}
}

// JSONEvent is one line of apply --json: a runner event, or the summary
// that ends the stream ("event": "summary"). Every duration is in
// seconds.
type JSONEvent struct {
	FormatVersion   int              `json:"format_version"`
	Time            time.Time        `json:"time"`
	Event           runner.EventKind `json:"event"`
	Step            string           `json:"step,omitempty"`
	Plugin          string           `json:"plugin,omitempty"`
	Message         string           `json:"message,omitempty"`
	Fraction        float64          `json:"fraction,omitempty"`
	BytesDone       int64            `json:"bytes_done,omitempty"`
	BytesTotal      int64            `json:"bytes_total,omitempty"`
	Attempt         int              `json:"attempt,omitempty"`
	EstimateSeconds float64          `json:"estimate_seconds,omitempty"`
	ElapsedSeconds  float64          `json:"elapsed_seconds,omitempty"`
	// The summary's fields.
	OK              *bool         `json:"ok,omitempty"`
	Steps           *int          `json:"steps,omitempty"`
	Outcomes        *jsonOutcomes `json:"outcomes,omitempty"`
	DurationSeconds *float64      `json:"duration_seconds,omitempty"`
}

// jsonOutcomes counts the steps of a run by outcome.
type jsonOutcomes struct {
	Done      int `json:"done"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
	Cancelled int `json:"cancelled"`
}

// summaryEvent is the last event of a run of total steps that began at
// start.
func summaryEvent(total int, o jsonOutcomes, start time.Time) JSONEvent {
	now := time.Now()
	ok := o.Done == total
	d := now.Sub(start).Seconds()
	return JSONEvent{FormatVersion: JSONFormatVersion, Time: now.UTC(), Event: "summary", OK: &ok, Steps: &total, Outcomes: &o, DurationSeconds: &d}
}

type jsonProgress struct {
	mu       sync.Mutex
	enc      *json.Encoder
	total    int
	start    time.Time
	outcomes jsonOutcomes
}

func (p *jsonProgress) Event(e runner.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Kind {
	case runner.EventDone:
		p.outcomes.Done++
	case runner.EventFailed:
		p.outcomes.Failed++
	case runner.EventSkipped:
		p.outcomes.Skipped++
	case runner.EventCancelled:
		p.outcomes.Cancelled++
	}
	p.enc.Encode(JSONEvent{
		FormatVersion: JSONFormatVersion, Time: e.Time, Event: e.Kind, Step: e.Step, Plugin: e.Plugin,
		Message: e.Message, Fraction: e.Fraction, BytesDone: e.BytesDone, BytesTotal: e.BytesTotal, Attempt: e.Attempt,
		EstimateSeconds: e.Estimate, ElapsedSeconds: e.Elapsed.Seconds(),
	})
}

// Close ends the stream with the summary.
func (p *jsonProgress) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.enc.Encode(summaryEvent(p.total, p.outcomes, p.start))
}

// eventLine is the text of an event worth a line, or "" for a progress
// event that says nothing new. finished counts steps with an outcome so
// far.
func eventLine(e runner.Event, finished, total int) string {
	counter := fmt.Sprintf("[%d/%d]", finished, total)
	switch e.Kind {
	case runner.EventStarted:
		return fmt.Sprintf("%s started   %s (%s)", counter, e.Step, e.Plugin)
	case runner.EventProgress:
		if text := progressText(e.Message, e.Fraction, e.BytesDone, e.BytesTotal); text != "" {
			return fmt.Sprintf("%s progress  %s: %s", counter, e.Step, text)
		}
	case runner.EventDone:
		return fmt.Sprintf("%s done      %s in %s", counter, e.Step, e.Elapsed.Round(time.Millisecond))
	case runner.EventFailed:
		return fmt.Sprintf("%s FAILED    %s: %s", counter, e.Step, e.Message)
	case runner.EventRetry:
		return fmt.Sprintf("%s retrying  %s after attempt %d: %s", counter, e.Step, e.Attempt, e.Message)
	case runner.EventSkipped:
		return fmt.Sprintf("%s skipped   %s: %s", counter, e.Step, e.Message)
	case runner.EventCancelled:
		return fmt.Sprintf("%s cancelled %s: %s", counter, e.Step, e.Message)
	}
	return ""
}

// progressText is a plugin's progress report as shown: its text, the
// bytes sent of the bytes to send when the plugin counts them ("12.4 MB
// of 30.1 MB sent"), and the fraction done as a percentage when the
// plugin gave one.
func progressText(message string, fraction float64, done, total int64) string {
	if total > 0 {
		sent := fmt.Sprintf("%s of %s sent", pools.Bytes(done), pools.Bytes(total))
		if message == "" {
			message = sent
		} else {
			message += ": " + sent
		}
	}
	switch {
	case fraction > 0 && message != "":
		return fmt.Sprintf("%s (%.0f%%)", message, 100*fraction)
	case fraction > 0:
		return fmt.Sprintf("%.0f%%", 100*fraction)
	}
	return message
}

func finishes(k runner.EventKind) bool {
	return k == runner.EventDone || k == runner.EventFailed || k == runner.EventSkipped || k == runner.EventCancelled
}

type lineProgress struct {
	mu       sync.Mutex
	w        io.Writer
	total    int
	finished int
	last     map[string]string // the last progress text shown per step
}

func (p *lineProgress) Event(e runner.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if finishes(e.Kind) {
		p.finished++
	}
	if e.Kind == runner.EventProgress {
		// A plugin that repeats itself gets one line.
		text := progressText(e.Message, e.Fraction, e.BytesDone, e.BytesTotal)
		if p.last == nil {
			p.last = map[string]string{}
		}
		if p.last[e.Step] == text {
			return
		}
		p.last[e.Step] = text
	}
	if line := eventLine(e, p.finished, p.total); line != "" {
		fmt.Fprintln(p.w, line)
	}
}

func (p *lineProgress) Close() {}
