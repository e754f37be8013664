package render

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"poolc.dev/poolc/pools"
)

// TextOptions shape the text rendering.
type TextOptions struct {
	// Color adds ANSI colors: green for steps that add, yellow for steps
	// that change, red for steps that take away.
	Color bool
}

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiRed    = "\x1b[31m"
	ansiDim    = "\x1b[2m"
)

// Text writes the plan for people: the steps in order with their symbol,
// reason and dependencies, then interruptions, lanes that cannot be
// placed, unserved aliases, steps that may have run, the state diff, and
// the summary line last. It writes through a buffer: a plan of 100,000
// steps is 300,000 lines, and a terminal or pipe written line by line
// costs a system call each.
func Text(out io.Writer, p *pools.Plan, opt TextOptions) {
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()
	paint := func(code, s string) string {
		if !opt.Color {
			return s
		}
		return code + s + ansiReset
	}
	header := fmt.Sprintf("Plan for pool %s", p.Pool)
	if p.Profile != "" {
		header += fmt.Sprintf(" (profile %s)", p.Profile)
	}
	fmt.Fprintln(w, paint(ansiBold, header))
	if !p.Empty() {
		fmt.Fprintln(w)
		for _, s := range p.Steps {
			sym := s.Kind.Symbol()
			color := ansiGreen
			switch sym {
			case "~":
				color = ansiYellow
			case "-":
				color = ansiRed
			}
			// Written piece by piece: a plan has thousands of steps.
			w.WriteString("  " + paint(color, sym) + " " + Title(p, s) + "\n")
			w.WriteString("      " + s.Reason + "\n")
			if len(s.DependsOn) > 0 {
				w.WriteString("      " + paint(ansiDim, "after "+strings.Join(s.DependsOn, ", ")) + "\n")
			}
		}
	}
	if len(p.Interruptions) > 0 {
		fmt.Fprintf(w, "\n%s\n", paint(ansiBold+ansiRed, "Interruptions (apply refuses them without --allow-interruption):"))
		for _, in := range p.Interruptions {
			fmt.Fprintf(w, "  ! %s unserved for about %ss: %s\n", in.Alias, pools.Num(in.Seconds), in.Reason)
		}
	}
	if len(p.Unplaced) > 0 {
		fmt.Fprintf(w, "\n%s\n", paint(ansiBold, "Cannot place:"))
		for _, u := range p.Unplaced {
			for _, l := range Unplaced(u) {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
	}
	if len(p.Unserved) > 0 {
		fmt.Fprintf(w, "\n%s\n", paint(ansiBold, "Unserved aliases:"))
		for _, u := range p.Unserved {
			fmt.Fprintf(w, "  %s: %s\n", u.Alias, u.Why)
		}
	}
	if len(p.TakenDown) > 0 {
		fmt.Fprintf(w, "\n%s\n", paint(ansiBold+ansiYellow, "Taken as down:"))
		for _, t := range p.TakenDown {
			fmt.Fprintf(w, "  %s\n", t)
		}
	}
	if len(p.MayHaveRun) > 0 {
		fmt.Fprintf(w, "\n%s\n", paint(ansiBold+ansiYellow, "May have run (check each on its target before applying):"))
		for _, m := range p.MayHaveRun {
			fmt.Fprintf(w, "  ? %s; %s\n", m.Why(), MayHaveRunOutcome(m))
		}
	}
	if d := UnifiedDiff("current", "planned", StateText(p.Before), StateText(p.After)); d != "" {
		fmt.Fprintf(w, "\n%s\n", paint(ansiBold, "State diff:"))
		for _, line := range strings.Split(strings.TrimSuffix(d, "\n"), "\n") {
			switch {
			case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"), strings.HasPrefix(line, "@@"):
				line = paint(ansiDim, line)
			case strings.HasPrefix(line, "+"):
				line = paint(ansiGreen, line)
			case strings.HasPrefix(line, "-"):
				line = paint(ansiRed, line)
			}
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	fmt.Fprintf(w, "\n%s\n", paint(ansiBold, p.Summary()))
}

// MayHaveRunOutcome says what applying the plan does with a step that may
// have run.
func MayHaveRunOutcome(m pools.MayHaveRun) string {
	if m.Planned {
		return "this plan holds it again: apply refuses to send it again without --retry-uncertain"
	}
	return "this plan does not hold it, so apply does not send it again"
}
