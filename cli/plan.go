package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/cli/views"
	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/compiler/planjson"
	"poolc.dev/poolc/internal/atomicfile"
	"poolc.dev/poolc/orchestrate"
	"poolc.dev/poolc/pools"
)

// ExitChanges is what plan --detailed-exitcode returns when the plan has
// changes.
const ExitChanges = 2

// now is the clock plans are stamped with. SOURCE_DATE_EPOCH (seconds
// since 1970), the reproducible-builds convention, pins it so that the same
// inputs give byte-identical output.
func now() time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if sec, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(sec, 0).UTC()
		}
	}
	return time.Now().UTC()
}

const planHelp = `Loads and validates the pool, reads the current state, places every lane
on the first live, uncordoned candidate node with room, and prints the
ordered, make-before-break step plan that takes the fleet there: each step
with its reason and the steps it waits for, the lanes that cannot be
placed, interruptions, and a diff of the state before and after.

The current state comes from the pool's state file (state { path = ... },
beside the first configuration file; --state to choose another), refreshed
from what the pool's plugins observe of their targets, as apply does:
whatever drifted (a lane that died, an alias routed by hand) is listed
with the plugin that saw it, and the plan puts it right. The refresh is
in memory only; the state file is not written. --refresh=false plans from
the state file as it is. Like validate, plan runs none of the checkout's
code: a declared plugin whose binary lies inside the repository (pinned
or not) is not started, and plan stops with an error at its
declaration (--allow-unpinned starts it).

A target the refresh cannot observe (a node whose sshd does not answer or
whose host key is unknown or changed, the gateway, a cluster, a registry)
is unknown, not absent: plan stops, exit 1, naming it, the cause and what
to do, and plans nothing, since the lanes there may still run. A node
down by its membership lease is taken as down; --assume-down NODE says a
node is down, and its lanes are placed elsewhere (the plan lists it under
"Taken as down"). While it reads, plan holds the state's lock, so it
never plans from a state an apply is half-way through writing
(--lock=false to skip, --lock-timeout to wait). No state file means an
empty fleet: the plan is a full bring-up. With --base the plan goes from
the configuration at --base to this one instead, with no state and no
plugins at all: what a pull request changes.

When a model's memory is estimated from its GGUF header (memory_gb
absent, or declared and checked: see poolc validate --help), the text and
Markdown plans end with each node's memory under the new placement: its
budget, the declared and the estimated memory of its lanes, what the
planner assumes at most (loaded lanes and the largest on-demand lane) and
the headroom left.

Examples:
  poolc plan examples/spark-lab
  poolc plan --base ../main/pools pools/ --format markdown > comment.md
  poolc plan --assume-down spark-node-01 pools/     # what if it dies?
  poolc plan --out plan.json pools/ && poolc show plan.json
  poolc plan --detailed-exitcode pools/ || echo "drift or changes"   # in CI

Exit codes: 0 success, 1 an error, an invalid configuration or a target
that cannot be observed; with
--detailed-exitcode 0 no changes, 1 error, 2 changes or aliases left
unserved (as --assume-down may leave them).`

const showHelp = `Renders a plan saved by 'poolc plan --out' in any format, for example to
post the plan a CI job made as a pull-request comment.

Examples:
  poolc show plan.json
  poolc show --format markdown plan.json

Exit codes: 0 success, 1 the file is not a readable plan.`

func runPlan(a *arguments.Plan, io Stdio) int {
	io.diags = diagFormFor(a.Format == "json", false, io.Err, a.NoColor)
	if err := arguments.PlanFormat(a.Format); err != nil {
		views.Failure(io.Err, "plan", err.Error())
		return ExitError
	}
	cfg, diags := compiler.LoadWith(a.Paths.Paths, memoryChecked(false))
	if diags.HasErrors() {
		writeDiagnostics(io, diags)
		return ExitError
	}
	unpinned := ""
	if !a.AllowUnpinned && len(a.Base) == 0 {
		unpinned = repositoryOf(cfg.Dir())
	}
	resp, err := orchestrate.Plan(context.Background(), orchestrate.PlanRequest{
		Common: orchestrate.Common{Config: cfg, StatePath: a.State, Refresh: a.Refresh, Lock: a.Lock,
			LockTimeout: a.LockTimeout, ObserveTimeout: a.ObserveTimeout, Operation: "plan", Version: Version(), Now: now(),
			Notice: func(msg string) { views.Notice(io.Err, msg) }, PluginOutput: io.Err, UnpinnedInside: unpinned},
		AssumeDown: a.AssumeDown,
		Base:       a.Base,
	})
	var oerr *orchestrate.Error
	switch {
	case errors.As(err, &oerr) && oerr.Err == nil:
		writeDiagnostics(io, oerr.Diagnostics)
		return ExitError
	case err != nil:
		return fail(io, "plan", err.Error())
	}
	p := resp.Plan
	diags = append(diags, resp.Diagnostics...)
	writeDiagnostics(io, diags) // warnings
	if a.Out != "" {
		if err := savePlan(a.Out, cfg, resp.State, a.AssumeDown, p); err != nil {
			views.Failure(io.Err, "plan", "saving the plan: "+err.Error())
			return ExitError
		}
	}
	if a.Format != "json" {
		views.Drift(io.Out, resp.Drift)
	}
	if err := views.Plan(io.Out, p, a.Format, useColor(io.Out, a.NoColor), Version()); err != nil {
		views.Failure(io.Err, "plan", err.Error())
		return ExitError
	}
	views.Memory(io.Out, cfg.Pool, p, a.Format)
	if a.DetailedExitcode && (!p.Empty() || len(p.Unserved) > 0) {
		return ExitChanges
	}
	return ExitOK
}

func runShow(a *arguments.Show, io Stdio) int {
	err := arguments.PlanFormat(a.Format)
	var saved *pools.SavedPlan
	if err == nil {
		saved, err = readSavedPlan(a.PlanFile)
	}
	if err == nil {
		err = views.Plan(io.Out, saved.Plan, a.Format, useColor(io.Out, a.NoColor), Version())
	}
	if err != nil {
		return fail(io, "show", err.Error())
	}
	return ExitOK
}

// useColor reports whether text output gets colors: only on a terminal,
// and never with --no-color or NO_COLOR set.
func useColor(w io.Writer, noColor bool) bool {
	if noColor || os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// savePlan writes a plan bound to the configuration and state it was made
// from.
func savePlan(path string, cfg *compiler.Config, st *pools.State, assumeDown []string, p *pools.Plan) error {
	saved := pools.SavedPlan{
		FormatVersion: pools.SavedPlanFormatVersion, PoolcVersion: Version(),
		ConfigHash: cfg.Hash, ConfigFiles: planFilePaths(path, cfg.Files),
		StateLineage: pools.LineageOf(st), StateSerial: st.Serial, StateHash: st.ContentHash(),
		AssumeDown: assumeDown, Plan: p,
	}
	data, err := planjson.MarshalSaved(&saved)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o644)
}

// maxSavedPlan is the most bytes read from a saved plan, far more than a
// plan of a pool at the 16 MiB limit; a larger file is not one.
const maxSavedPlan = 512 << 20

func readSavedPlan(path string) (*pools.SavedPlan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSavedPlan+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSavedPlan {
		return nil, fmt.Errorf("%s is not a saved plan: it is larger than %d MiB", path, maxSavedPlan>>20)
	}
	saved, err := planjson.ParseSaved(path, data)
	if err == nil {
		saved.ConfigFiles = resolvePlanFiles(path, saved.ConfigFiles)
	}
	return saved, err
}
