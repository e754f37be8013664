package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/compiler/render"
	"poolc.dev/poolc/internal/atomicfile"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store"
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

func init() {
	register(&command{
		name:    "plan",
		args:    "[PATH...]",
		summary: "show the steps that take the fleet to the configuration",
		help: `Loads and validates the pool, reads the current state, places every lane
on the first live, uncordoned candidate node with room, and prints the
ordered, make-before-break step plan that takes the fleet there: each step
with its reason and the steps it waits for, the lanes that cannot be
placed, interruptions, and a diff of the state before and after.

The current state comes from the pool's state file (state { path = ... },
beside the first configuration file; --state to choose another). No state
file means an empty fleet: the plan is a full bring-up. With --base the
plan goes from the configuration at --base to this one instead, with no
state at all: what a pull request changes.

Examples:
  poolc plan examples/spark-lab
  poolc plan --base ../main/pools pools/ --format markdown > comment.md
  poolc plan --assume-down spark-node-01 pools/     # what if it dies?
  poolc plan --out plan.json pools/ && poolc show plan.json

Exit codes: 0 success, 1 an error or an invalid configuration; with
--detailed-exitcode 0 no changes, 1 error, 2 changes.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			statePath := fs.String("state", "", "state file to plan from (default: the pool's own)")
			base := fs.StringArray("base", nil, "plan from the configuration at this path instead of from the state (repeatable)")
			assumeDown := fs.StringArray("assume-down", nil, "treat this node as down (repeatable)")
			out := fs.String("out", "", "also save the plan to this file, for poolc show and apply")
			format := fs.String("format", "text", "output format: text, json or markdown")
			detailed := fs.Bool("detailed-exitcode", false, "exit 2 when the plan has changes, 0 when it has none")
			noColor := fs.Bool("no-color", false, "no colors in text output (also when NO_COLOR is set)")
			return func(args []string, io Stdio) int {
				if err := checkFormat(*format); err != nil {
					fmt.Fprintf(io.Err, "poolc plan: %v\n", err)
					return ExitError
				}
				cfg, diags := compiler.Load(args)
				if diags.HasErrors() {
					writeDiagnostics(io, diags)
					return ExitError
				}
				current, err := currentState(cfg, *statePath, *base)
				if err != nil {
					fmt.Fprintf(io.Err, "poolc plan: %v\n", err)
					return ExitError
				}
				p, err := compiler.Plan(cfg, current, compiler.PlanOptions{AssumeDown: *assumeDown, Now: now()})
				if err != nil {
					fmt.Fprintf(io.Err, "poolc plan: %v\n", err)
					return ExitError
				}
				writeDiagnostics(io, diags) // warnings
				if *out != "" {
					if err := savePlan(*out, cfg, current, *assumeDown, p); err != nil {
						fmt.Fprintf(io.Err, "poolc plan: saving the plan: %v\n", err)
						return ExitError
					}
				}
				if err := writePlan(io, p, *format, useColor(io.Out, *noColor)); err != nil {
					fmt.Fprintf(io.Err, "poolc plan: %v\n", err)
					return ExitError
				}
				if *detailed && !p.Empty() {
					return ExitChanges
				}
				return ExitOK
			}
		},
	})
	register(&command{
		name:    "show",
		args:    "PLANFILE",
		summary: "render a saved plan",
		help: `Renders a plan saved by 'poolc plan --out' in any format, for example to
post the plan a CI job made as a pull-request comment.

Examples:
  poolc show plan.json
  poolc show --format markdown plan.json

Exit codes: 0 success, 1 the file is not a readable plan.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			format := fs.String("format", "text", "output format: text, json or markdown")
			noColor := fs.Bool("no-color", false, "no colors in text output (also when NO_COLOR is set)")
			return func(args []string, io Stdio) int {
				if len(args) != 1 {
					fmt.Fprintf(io.Err, "poolc show: want one PLANFILE, got %d arguments\nRun 'poolc show --help' for usage.\n", len(args))
					return ExitError
				}
				if err := checkFormat(*format); err != nil {
					fmt.Fprintf(io.Err, "poolc show: %v\n", err)
					return ExitError
				}
				saved, err := readSavedPlan(args[0])
				if err != nil {
					fmt.Fprintf(io.Err, "poolc show: %v\n", err)
					return ExitError
				}
				if err := writePlan(io, saved.Plan, *format, useColor(io.Out, *noColor)); err != nil {
					fmt.Fprintf(io.Err, "poolc show: %v\n", err)
					return ExitError
				}
				return ExitOK
			}
		},
	})
}

func checkFormat(format string) error {
	switch format {
	case "text", "json", "markdown":
		return nil
	}
	return fmt.Errorf("unknown --format %q: want text, json or markdown", format)
}

func writePlan(io Stdio, p *pools.Plan, format string, color bool) error {
	switch format {
	case "json":
		return render.JSON(io.Out, p, Version())
	case "markdown":
		render.Markdown(io.Out, p)
		return nil
	}
	render.Text(io.Out, p, render.TextOptions{Color: color})
	return nil
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

// currentState is the state a plan starts from: the desired fleet of the
// base configuration in code review mode, else the state file.
func currentState(cfg *compiler.Config, statePath string, base []string) (*pools.State, error) {
	if len(base) > 0 {
		baseCfg, diags := compiler.Load(base)
		if diags.HasErrors() {
			return nil, fmt.Errorf("base configuration:\n%v", diags.Err())
		}
		return compiler.Desired(baseCfg), nil
	}
	b, err := openBackend(cfg, statePath)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	st, err := store.ReadPool(b, cfg.Pool.Name)
	if err == nil {
		err = markMembers(cfg, st)
	}
	return st, err
}

// savePlan writes a plan bound to the configuration and state it was made
// from.
func savePlan(path string, cfg *compiler.Config, st *pools.State, assumeDown []string, p *pools.Plan) error {
	saved := pools.SavedPlan{
		FormatVersion: pools.SavedPlanFormatVersion, PoolcVersion: Version(),
		ConfigHash: cfg.Hash, ConfigFiles: cfg.Files,
		StateLineage: pools.LineageOf(st), StateSerial: st.Serial, StateHash: st.ContentHash(),
		AssumeDown: assumeDown, Plan: p,
	}
	data, err := json.MarshalIndent(saved, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'), 0o644)
}

func readSavedPlan(path string) (*pools.SavedPlan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return pools.ParseSavedPlan(path, data)
}
