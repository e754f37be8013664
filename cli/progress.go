package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"poolc.dev/poolc/runner"
)

// progressView shows a run as it goes.
type progressView interface {
	Event(e runner.Event)
	Close()
}

// newProgress picks the display: a JSON event per line for machines, live
// bars on a terminal, one line per event otherwise (CI logs).
func newProgress(w io.Writer, asJSON, terminal bool, total int) progressView {
	switch {
	case asJSON:
		enc := json.NewEncoder(w)
		return &jsonProgress{enc: enc}
	case terminal:
		return newBarProgress(w, total)
	}
	return &lineProgress{w: w, total: total}
}

type jsonProgress struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (p *jsonProgress) Event(e runner.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.enc.Encode(e)
}

func (p *jsonProgress) Close() {}

// eventLine is the text of an event worth a line, or "" for progress
// chatter. finished counts steps with an outcome so far.
func eventLine(e runner.Event, finished, total int) string {
	counter := fmt.Sprintf("[%d/%d]", finished, total)
	switch e.Kind {
	case runner.EventStarted:
		return fmt.Sprintf("%s started   %s (%s)", counter, e.Step, e.Plugin)
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

func finishes(k runner.EventKind) bool {
	return k == runner.EventDone || k == runner.EventFailed || k == runner.EventSkipped || k == runner.EventCancelled
}

type lineProgress struct {
	mu       sync.Mutex
	w        io.Writer
	total    int
	finished int
}

func (p *lineProgress) Event(e runner.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if finishes(e.Kind) {
		p.finished++
	}
	if line := eventLine(e, p.finished, p.total); line != "" {
		fmt.Fprintln(p.w, line)
	}
}

func (p *lineProgress) Close() {}

// barProgress is a live bar of the steps finished, with the step events
// printed above it.
type barProgress struct {
	mu       sync.Mutex
	p        *mpb.Progress
	bar      *mpb.Bar
	total    int
	finished int
}

func newBarProgress(w io.Writer, total int) *barProgress {
	p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithRefreshRate(100*time.Millisecond))
	bar := p.AddBar(int64(total),
		mpb.PrependDecorators(decor.Name("applying "), decor.CountersNoUnit("%d/%d steps")),
		mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO)),
	)
	return &barProgress{p: p, bar: bar, total: total}
}

func (b *barProgress) Event(e runner.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if finishes(e.Kind) {
		b.finished++
		b.bar.Increment()
	}
	if e.Kind == runner.EventStarted {
		return // the bar shows it; lines are for outcomes
	}
	if line := eventLine(e, b.finished, b.total); line != "" {
		fmt.Fprintln(b.p, line)
	}
}

func (b *barProgress) Close() {
	b.bar.SetTotal(-1, true)
	b.p.Wait()
}
