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
	"time"

	"github.com/spf13/pflag"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/compiler/render"
	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
	"poolc.dev/poolc/runner/store"
)

func init() {
	register(&command{
		name:    "apply",
		args:    "[PLANFILE | PATH...]",
		summary: "carry out the plan through the actuator plugins",
		help: `Takes the fleet to the configuration. With PATHs: locks the state, starts
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

A plan that interrupts service (an alias with no lane for a while) is
refused unless --allow-interruption. Two applies never run at once: the
second fails at once with the first one's lock info, or waits up to
--lock-timeout. The first Ctrl-C stops new steps and cancels those in
flight cleanly; a second stops at once.

Examples:
  poolc apply --auto-approve examples/spark-lab
  poolc plan --out plan.json pools/ && poolc apply plan.json
  poolc apply --auto-approve --json pools/ > events.jsonl   # for CI

Exit codes: 0 every step done (or nothing to do); 1 an error, a refused
plan, a failed or cancelled step; 130 stopped by a second Ctrl-C.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			var o applyOptions
			fs.BoolVar(&o.autoApprove, "auto-approve", false, "do not ask for confirmation (required when not on a terminal)")
			fs.BoolVar(&o.allowInterruption, "allow-interruption", false, "carry out a plan that leaves an alias unserved for a while")
			fs.BoolVar(&o.refresh, "refresh", true, "refresh the state from the plugins before planning")
			fs.DurationVar(&o.lockTimeout, "lock-timeout", 0, "wait this long for another apply's lock (0: fail at once)")
			fs.IntVar(&o.parallelism, "parallelism", runner.DefaultParallelism, "steps in flight at once")
			fs.DurationVar(&o.stepTimeout, "step-timeout", runner.DefaultStepTimeout, "time limit of one attempt of a step")
			fs.IntVar(&o.retries, "retries", runner.DefaultRetries, "retries of a step that fails retryably")
			fs.StringVar(&o.statePath, "state", "", "state file (default: the pool's own)")
			fs.BoolVar(&o.json, "json", false, "print a JSON event per line instead of the plan and progress")
			fs.BoolVar(&o.noColor, "no-color", false, "no colors in text output (also when NO_COLOR is set)")
			return func(args []string, io Stdio) int {
				return apply(args, o, io)
			}
		},
	})
}

type applyOptions struct {
	autoApprove, allowInterruption, refresh, json, noColor bool
	lockTimeout, stepTimeout                               time.Duration
	parallelism, retries                                   int
	statePath                                              string
}

// applyFail prints a failure of apply, once, and returns the exit code.
func applyFail(io Stdio, format string, args ...any) int {
	fmt.Fprintf(io.Err, "poolc apply: "+format+"\n", args...)
	return ExitError
}

func apply(args []string, o applyOptions, io Stdio) int {
	var saved *pools.SavedPlan
	if len(args) == 1 && strings.HasSuffix(args[0], ".json") {
		s, err := readSavedPlan(args[0])
		if err != nil {
			return applyFail(io, "%v", err)
		}
		saved, args = s, s.ConfigFiles
	}
	cfg, diags := compiler.Load(args)
	if diags.HasErrors() {
		writeDiagnostics(io, diags)
		return ExitError
	}
	st, err := openBackend(cfg, o.statePath)
	if err != nil {
		return applyFail(io, "%v", err)
	}
	defer st.Close()

	lockCtx, cancelLock := context.WithTimeout(context.Background(), o.lockTimeout)
	lock, err := st.Acquire(lockCtx, store.NewLockInfo("apply", Version()), func(stale store.LockInfo) {
		fmt.Fprintf(io.Err, "Took over a stale lock: %s; the process is gone.\n", stale)
	})
	cancelLock()
	if err != nil {
		return applyFail(io, "%v", err)
	}
	defer lock.Unlock()

	state, err := store.ReadPool(st, cfg.Pool.Name)
	if err != nil {
		return applyFail(io, "%v", err)
	}
	interrupted, err := st.LastApply()
	if err != nil {
		return applyFail(io, "reading the journal: %v", err)
	}
	if saved != nil && interrupted != nil {
		return applyFail(io, "saved plan is stale: the last apply was interrupted, so the state may not be what was planned against; plan again")
	}
	if interrupted != nil {
		fmt.Fprintf(io.Err, "The last apply (%s) was interrupted with %d steps in flight; refreshing from the plugins before planning.\n", interrupted.Apply, len(interrupted.InFlight))
	}

	if len(cfg.Pool.Plugins) == 0 {
		return applyFail(io, "pool %s declares no plugins: add plugin \"sim\" { builtin = true } to try poolc without hardware", cfg.Pool.Name)
	}
	ctx := context.Background()
	set, pdiags := host.Start(ctx, cfg.Pool.Plugins, host.Options{Pool: cfg.Pool.Name, WorkDir: cfg.Dir(), Stderr: io.Err})
	if set != nil {
		defer set.Close()
	}
	cfg.Sources.Attach(pdiags)
	if pdiags.HasErrors() {
		writeDiagnostics(io, pdiags)
		return ExitError
	}

	state.Pool = cfg.Pool.Name
	if o.refresh || interrupted != nil {
		octx, cancel := context.WithTimeout(ctx, o.stepTimeout)
		observed, managed, odiags := set.Observe(octx)
		cancel()
		cfg.Sources.Attach(odiags)
		if odiags.HasErrors() {
			writeDiagnostics(io, odiags)
			return ExitError
		}
		if refreshed := refresh(state, observed, managed); refreshed && saved == nil { // a saved plan is checked against it below
			if err := st.Write(state); err != nil {
				return applyFail(io, "%v", err)
			}
		}
	}
	if err := markMembers(cfg, state); err != nil {
		return applyFail(io, "%v", err)
	}
	if saved != nil {
		if err := compiler.CheckSavedPlan(cfg, state, saved); err != nil {
			return applyFail(io, "%v", err)
		}
	}

	plan := (*pools.Plan)(nil)
	if saved != nil {
		plan = saved.Plan
	} else if plan, err = compiler.Plan(cfg, state, compiler.PlanOptions{Now: now()}); err != nil {
		return applyFail(io, "%v", err)
	}
	if !o.json {
		render.Text(io.Out, plan, render.TextOptions{Color: useColor(io.Out, o.noColor)})
	}
	if plan.Empty() {
		if interrupted != nil {
			// The refresh settled what the interrupted apply left: close it.
			if j, err := st.BeginJournal(store.NewID()); err == nil {
				j.End("refreshed after an interrupted apply; nothing to do")
			}
		}
		return ExitOK
	}
	if len(plan.Interruptions) > 0 && !o.allowInterruption {
		var which []string
		for _, in := range plan.Interruptions {
			which = append(which, fmt.Sprintf("%s for about %ss", in.Alias, pools.Num(in.Seconds)))
		}
		return applyFail(io, "refusing a plan that leaves aliases unserved (%s); pass --allow-interruption to accept it", strings.Join(which, ", "))
	}
	if !o.autoApprove && saved == nil { // a saved plan was reviewed when it was made
		if !isTerminal(io.In) {
			return applyFail(io, "not on a terminal: pass --auto-approve to apply without confirmation")
		}
		fmt.Fprint(io.Out, "\nDo you want to carry out these steps? Only 'yes' is accepted: ")
		answer, _ := bufio.NewReader(io.In).ReadString('\n')
		if strings.TrimSpace(answer) != "yes" {
			return applyFail(io, "cancelled: the answer was not yes")
		}
	}
	return execute(cfg, st, state, plan, set, o, io)
}

// refresh replaces the lists of the state the plugins manage with what
// they observe, and reports whether anything changed.
func refresh(st *pools.State, observed pools.Fleet, managed map[string]bool) bool {
	before := render.StateText(st.Fleet)
	if managed["lanes"] {
		st.Lanes = observed.Lanes
	}
	if managed["routes"] {
		st.Routes = observed.Routes
	}
	if managed["prefetched"] {
		st.Prefetched = observed.Prefetched
	}
	if managed["members"] {
		st.Members = observed.Members
	}
	if managed["nodes"] {
		st.Nodes = observed.Nodes
	}
	st.Normalize()
	return render.StateText(st.Fleet) != before
}

// execute runs the plan, recording every step in the state and journal.
func execute(cfg *compiler.Config, st store.Backend, state *pools.State, plan *pools.Plan, acts runner.Actuators, o applyOptions, io Stdio) int {
	journal, err := st.BeginJournal(store.NewID())
	if err != nil {
		return applyFail(io, "%v", err)
	}
	state.Nodes = plan.After.Nodes
	rec := runner.NewStoreRecorder(journal, state)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		<-signals
		fmt.Fprintln(io.Err, "\nStopping: no new steps; cancelling the steps in flight. Press Ctrl-C again to stop at once.")
		cancel()
		<-signals
		fmt.Fprintln(io.Err, "Stopped at once. The journal and state hold every finished step; the next apply refreshes and carries on.")
		store.Exit(130) // releases the lock
	}()

	view := newProgress(io.Out, o.json, !o.json && isTerminal(io.Out), len(plan.Steps))
	res := runner.Run(ctx, plan, state, acts, rec, runner.Options{
		Parallelism: o.parallelism, StepTimeout: o.stepTimeout, Retries: retriesOption(o.retries), Events: view.Event,
	})
	view.Close()
	summary := fmt.Sprintf("%d done, %d failed, %d skipped, %d cancelled", res.Count(runner.Done), res.Count(runner.Failed), res.Count(runner.Skipped), res.Count(runner.Cancelled))
	if err := journal.End(summary); err != nil {
		res.WriteErr = errors.Join(res.WriteErr, err)
	}
	if res.WriteErr != nil {
		fmt.Fprintf(io.Err, "poolc apply: recording the apply: %v\n", res.WriteErr)
	}
	if res.OK() {
		if !o.json {
			fmt.Fprintf(io.Out, "\nApply complete: %d steps done.\n", len(res.Steps))
		}
		return ExitOK
	}
	for _, s := range res.Steps {
		if s.Outcome != runner.Failed {
			continue
		}
		for _, d := range s.Diagnostics {
			msg := d.Summary
			if d.Detail != "" {
				msg += ": " + d.Detail
			}
			fmt.Fprintf(io.Err, "%s failed (%s): %s\n", s.ID, orDash(s.Plugin), msg)
		}
	}
	fmt.Fprintf(io.Err, "Apply failed: %s.\n", summary)
	return ExitError
}

// retriesOption turns the --retries count into runner.Options.Retries,
// where 0 means the default and a negative number none.
func retriesOption(n int) int {
	if n == 0 {
		return -1
	}
	return n
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
