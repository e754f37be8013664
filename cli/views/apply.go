package views

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"poolc.dev/poolc/compiler/render"
	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
)

// Apply is the view of poolc apply around its progress (NewProgress):
// the plan and drift before the run, the prompt, the notices of a stop,
// the steps a killed apply left uncertain, and the outcome. Out and Err
// are standard output and standard error; JSON is --json, where Out
// holds one event per line; Color colors the plan's text.
type Apply struct {
	Out, Err    io.Writer
	JSON, Color bool
}

// Stopping says that a first interrupt stops new steps and cancels
// those in flight.
func (v Apply) Stopping() {
	fmt.Fprintln(v.Err, "\nStopping: no new steps; cancelling the steps in flight. Press Ctrl-C again to stop at once.")
}

// StoppedAtOnce says that a second interrupt stops apply at once, and
// that nothing finished is lost.
func (v Apply) StoppedAtOnce() {
	fmt.Fprintln(v.Err, "Stopped at once. The journal and state hold every finished step; the next apply refreshes and carries on.")
}

// Planned shows, in text, what the refresh found drifted and the plan
// about to run; with JSON the events say it.
func (v Apply) Planned(p *pools.Plan, drift []host.Drift) {
	if v.JSON {
		return
	}
	Drift(v.Out, drift)
	render.Text(v.Out, p, render.TextOptions{Color: v.Color})
}

// Confirm asks whether to carry out the plan shown.
func (v Apply) Confirm() {
	fmt.Fprint(v.Out, "\nDo you want to carry out these steps? Only 'yes' is accepted: ")
}

// MayHaveRun reports the steps a killed apply left that may have run: a
// warning line each on standard error, or with JSON a "may-have-run"
// event each. resent says --retry-uncertain sends again those the new
// plan holds.
func (v Apply) MayHaveRun(steps []pools.MayHaveRun, resent bool) {
	enc := json.NewEncoder(v.Out)
	for _, u := range steps {
		what := "not in the new plan, so not sent again"
		switch {
		case u.Planned && resent:
			what = "sending it again (--retry-uncertain)"
		case u.Planned:
			what = "not sent again"
		}
		msg := u.Why() + "; " + what
		if v.JSON {
			enc.Encode(JSONEvent{FormatVersion: JSONFormatVersion, Time: time.Now().UTC(), Event: "may-have-run", Step: u.Step, Plugin: u.Plugin, Message: msg})
			continue
		}
		fmt.Fprintf(v.Err, "warning: %s\n", msg)
	}
}

// Outcome ends an apply that ran: "Apply complete" on standard output,
// or each failed step's diagnostics and summary (the outcomes counted)
// on standard error; with JSON the summary event has said it all unless
// a step failed. A failure to record the run comes first.
func (v Apply) Outcome(res runner.Result, summary string) {
	if res.WriteErr != nil {
		Failure(v.Err, "apply", "recording the apply: "+res.WriteErr.Error())
	}
	if res.OK() {
		if !v.JSON {
			fmt.Fprintf(v.Out, "\nApply complete: %s done.\n", plural.Count(len(res.Steps), "step"))
		}
		return
	}
	for _, s := range res.Steps {
		if s.Outcome != runner.Failed {
			continue
		}
		for _, d := range s.Diagnostics {
			fmt.Fprintf(v.Err, "%s failed (%s): %s\n", s.ID, orDash(s.Plugin), d.Message)
		}
	}
	fmt.Fprintf(v.Err, "Apply failed: %s.\n", summary)
}

// Drift lists what the refresh found different from the state, each
// difference with the plugin that saw it; nothing when nothing drifted.
func Drift(w io.Writer, drift []host.Drift) {
	if len(drift) == 0 {
		return
	}
	fmt.Fprintf(w, "Drift: the plugins see %s from the state:\n", plural.Count(len(drift), "difference"))
	for _, d := range drift {
		fmt.Fprintf(w, "  ~ %s (seen by plugin %s)\n", d.What, d.Plugin)
	}
	fmt.Fprintln(w)
}

// Notice is a line a command's work says as it goes (a lock waited for,
// a refresh skipped), on standard error.
func Notice(errw io.Writer, msg string) {
	fmt.Fprintln(errw, msg)
}

// Failure is the text of an error of a command: "poolc COMMAND: MESSAGE"
// on standard error.
func Failure(errw io.Writer, command, message string) {
	fmt.Fprintf(errw, "poolc %s: %s\n", command, message)
}

// orDash is s, or "-" for a column left empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
