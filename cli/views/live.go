package views

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/term"

	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/runner"
)

// liveProgress is apply's display on a terminal: the outcome of every
// finished step scrolls by as a line, and below them a live area shows
// the steps in flight, each with its plugin's latest progress text and
// fraction, and a status line with the counts. The live area is redrawn
// on every event (the cursor goes back up over it and erases it), and
// every line of it is cut to the terminal's width so that none wraps.
type liveProgress struct {
	mu       sync.Mutex
	w        io.Writer
	width    int
	total    int
	finished int
	inFlight []*flight // in the order they started
	drawn    int       // lines of the live area on the screen
}

// flight is a step in flight as the live area shows it.
type flight struct {
	step, plugin, text string
	fraction           float64
	done, total        int64 // bytes, when the plugin counts them
}

// defaultWidth is the width assumed when the terminal does not say.
const defaultWidth = 80

func newLiveProgress(w io.Writer, total int) *liveProgress {
	width := defaultWidth
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			width = cols
		}
	}
	return &liveProgress{w: w, width: width, total: total}
}

func (l *liveProgress) Event(e runner.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	l.erase(&b)
	switch e.Kind {
	case runner.EventStarted:
		l.inFlight = append(l.inFlight, &flight{step: e.Step, plugin: e.Plugin})
	case runner.EventProgress:
		if f := l.find(e.Step); f != nil {
			if e.Message != "" {
				f.text = e.Message
			}
			if e.Fraction > 0 {
				f.fraction = e.Fraction
			}
			if e.BytesTotal > 0 {
				f.done, f.total = e.BytesDone, e.BytesTotal
			}
		}
	case runner.EventRetry:
		fmt.Fprintln(&b, eventLine(e, l.finished, l.total))
	default:
		if finishes(e.Kind) {
			l.finished++
			l.land(e.Step)
			fmt.Fprintln(&b, eventLine(e, l.finished, l.total))
		}
	}
	l.draw(&b)
	io.WriteString(l.w, b.String())
}

// Close erases the live area: what stays on the screen is the steps'
// outcomes.
func (l *liveProgress) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	l.erase(&b)
	io.WriteString(l.w, b.String())
}

func (l *liveProgress) find(step string) *flight {
	for _, f := range l.inFlight {
		if f.step == step {
			return f
		}
	}
	return nil
}

// land takes a finished step out of the live area.
func (l *liveProgress) land(step string) {
	for i, f := range l.inFlight {
		if f.step == step {
			l.inFlight = append(l.inFlight[:i], l.inFlight[i+1:]...)
			return
		}
	}
}

// erase moves the cursor back to the top of the live area and clears the
// screen from there.
func (l *liveProgress) erase(b *strings.Builder) {
	if l.drawn > 0 {
		fmt.Fprintf(b, "\033[%dA\r\033[J", l.drawn)
	}
	l.drawn = 0
}

// draw writes the live area: a line per step in flight, then the status.
func (l *liveProgress) draw(b *strings.Builder) {
	for _, f := range l.inFlight {
		line := "  " + stepTitle(f.step)
		if f.plugin != "" {
			line += " (" + f.plugin + ")"
		}
		if text := progressText(f.text, f.fraction, f.done, f.total); text != "" {
			line += "  " + text
		}
		l.line(b, line)
	}
	status := fmt.Sprintf("Applying: %d of %s finished", l.finished, plural.Count(l.total, "step"))
	if n := len(l.inFlight); n > 0 {
		status += fmt.Sprintf(", %d in flight", n)
	}
	l.line(b, status)
}

// line writes one line of the live area, cut to the width.
func (l *liveProgress) line(b *strings.Builder, s string) {
	if utf8.RuneCountInString(s) >= l.width {
		r := []rune(s)
		s = string(r[:l.width-2]) + "…"
	}
	b.WriteString(s)
	b.WriteString("\033[K\n")
	l.drawn++
}

// stepTitle is a step ID as a phrase: "prefetch:qwen3-27b@mac-studio"
// becomes "prefetch qwen3-27b → mac-studio".
func stepTitle(id string) string {
	kind, target, ok := strings.Cut(id, ":")
	if !ok {
		return id
	}
	if what, node, ok := strings.Cut(target, "@"); ok {
		return kind + " " + what + " → " + node
	}
	return kind + " " + target
}
