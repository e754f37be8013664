package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/cli/views"
	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/orchestrate"
	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
	"poolc.dev/poolc/runner/store"
)

const applyHelp = `Takes the fleet to the configuration. With PATHs: locks the state, starts
the pool's actuator plugins, refreshes the state from what they observe,
plans, shows the plan, asks for confirmation (on a terminal; elsewhere
--auto-approve is required) and carries it out. With a PLANFILE saved by
"poolc plan --out": carries out exactly that plan without asking again,
refusing it when the configuration or the state changed since ("saved plan
is stale").

Steps run in dependency order, --parallelism at a time. A failed step
skips every step that depends on it; independent steps go on. Only
failures the plugin marks retryable are retried, up to --retries times,
each wait twice as long as the one before. An attempt that runs past
--step-timeout fails as timed out and is not retried unless the plugin
marked that failure retryable: the step may still be running on its
target. The state
is written after every step and a journal records each step as it starts
and ends, so a killed apply loses nothing: the next one refreshes from the
plugins and carries on without starting a lane twice.

Exactly once needs a plugin that observes what its steps change (lanes for
start, stop, residency and drain; routes; prefetched weights; members;
images). A step that was in flight when an apply was killed, sent to a
plugin that does not observe its part, may have run or not: the next
apply reports it as "may have run" (a line on stderr; with --json an
{"event": "may-have-run", "step": ..., "plugin": ...} line) and, when the
new plan holds it again, refuses to run before any step, naming each.
Check the step on its target; if it did not run, or running it twice is
harmless, --retry-uncertain sends it again (each still reported). A step
the new plan no longer holds is reported and never sent.

A target the refresh cannot observe (a node whose sshd does not answer,
whose host key is unknown or changed; the gateway; a cluster; a
registry) stops apply before any step, naming it, the cause and what to
do: poolc never starts elsewhere, stops or routes away what it cannot
see. A node down by its membership lease is taken as down; for any other
node, --assume-down NODE says it is down, and its lanes are placed
elsewhere (the plan says so). --refresh=false applies from the state
file alone.

A plan that interrupts service (an alias with no lane for a while) is
refused unless --allow-interruption. Two applies never run at once: the
second fails at once with the first one's lock info, or waits up to
--lock-timeout. The first Ctrl-C stops new steps and cancels those in
flight cleanly; a second stops at once.

On a terminal the steps in flight show with their plugin's latest
progress; elsewhere each event is a line. --json prints one JSON object
per line instead: the runner's events (durations in seconds), a refusal
as {"event": "diagnostics", ...} with file, line and column, and at the
end {"event": "summary", "ok": ..., "steps": N, "outcomes": {...},
"duration_seconds": ...}. A PLANFILE is recognised by its content, from
any working directory.

Examples:
  poolc apply --auto-approve examples/spark-lab
  poolc plan --out plan.json pools/ && poolc apply plan.json
  poolc apply --auto-approve --json pools/ > events.jsonl   # for CI

Exit codes: 0 every step done (or nothing to do); 1 an error, a refused
plan, a failed or cancelled step; 130 stopped by a second Ctrl-C.`

// applyFail prints a failure of apply, once, and returns the exit code.
func applyFail(io Stdio, format string, args ...any) int {
	return fail(io, "apply", fmt.Sprintf(format, args...))
}

func runApply(a *arguments.Apply, io Stdio) int {
	io.diags = diagFormFor(a.JSON, true, io.Err, a.NoColor)
	args := a.Paths.Paths
	var saved *pools.SavedPlan
	if savedPlanArg(args) {
		s, err := readSavedPlan(args[0])
		if err != nil {
			return applyFail(io, "%v", err)
		}
		saved, args = s, s.ConfigFiles
		if len(a.AssumeDown) > 0 {
			made := "none"
			if len(s.AssumeDown) > 0 {
				made = strings.Join(s.AssumeDown, ", ")
			}
			return applyFail(io, "--assume-down with a saved plan: the plan carries the nodes it was made with (%s); plan again with --assume-down instead", made)
		}
	}
	cfg, diags := compiler.Load(args)
	if diags.HasErrors() {
		writeDiagnostics(io, diags)
		return ExitError
	}

	v := views.Apply{Out: io.Out, Err: io.Err, JSON: a.JSON, Color: useColor(io.Out, a.NoColor)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		<-signals
		v.Stopping()
		cancel()
		<-signals
		v.StoppedAtOnce()
		store.Exit(130) // releases the lock
	}()

	var view views.Progress
	req := orchestrate.ApplyRequest{
		Common: orchestrate.Common{
			Config: cfg, StatePath: a.State, Refresh: a.Refresh, LockTimeout: a.LockTimeout,
			ObserveTimeout: a.StepTimeout, Operation: "apply", Version: Version(), Now: now(),
			Notice: func(msg string) { views.Notice(io.Err, msg) }, PluginOutput: io.Err,
		},
		Saved:             saved,
		AssumeDown:        a.AssumeDown,
		AllowInterruption: a.AllowInterruption,
		RetryUncertain:    a.RetryUncertain,
		MayHaveRun:        v.MayHaveRun,
		Planned: func(p *pools.Plan, drift []host.Drift) {
			v.Planned(p, drift)
			view = views.NewProgress(io.Out, a.JSON, !a.JSON && isTerminal(io.Out), len(p.Steps))
		},
		Run: runner.Options{Parallelism: a.Parallelism, StepTimeout: a.StepTimeout, Retries: a.RunnerRetries()},
	}
	req.Run.Events = func(e runner.Event) { view.Event(e) } // set by Planned before the run
	if !a.AutoApprove {
		req.Confirm = func(*pools.Plan) bool {
			if !isTerminal(io.In) {
				applyFail(io, "not on a terminal: pass --auto-approve to apply without confirmation")
				return false
			}
			v.Confirm()
			answer, _ := bufio.NewReader(io.In).ReadString('\n')
			return strings.TrimSpace(answer) == "yes"
		}
	}
	resp, err := orchestrate.Apply(ctx, req)
	if view != nil {
		view.Close()
	}
	var oerr *orchestrate.Error
	switch {
	case errors.As(err, &oerr) && oerr.Err == nil:
		writeDiagnostics(io, oerr.Diagnostics)
		return ExitError
	case errors.Is(err, orchestrate.ErrNotApproved) && !isTerminal(io.In):
		return ExitError // the reason is printed
	case err != nil:
		return applyFail(io, "%v", err)
	}
	writeDiagnostics(io, resp.Diagnostics) // warnings
	if !resp.Ran {
		return ExitOK
	}
	v.Outcome(resp.Result, resp.Summary)
	if resp.Result.OK() {
		return ExitOK
	}
	return ExitError
}

// isTerminal reports whether a stream is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
