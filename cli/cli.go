// Package cli is poolc's command line. The table of commands
// (commands.go) pairs each command's name and help with its arguments,
// parsed by package arguments into one struct, and with the function that
// runs it: it calls the package that does the work (compiler,
// orchestrate, membership, runner/store, sim) and hands the result to a
// view that writes to the injected streams of Stdio, so every command's
// output is testable. Every command's output is a view of package
// views: diagnostics and validation, plans, apply's progress (JSON
// lines, log lines or live bars on a terminal) and its outcome, each
// command's tables and messages, with a JSON view beside the human one
// where the command has --format json or --json, and the simulation
// report (views.go binds the diagnostics to Stdio). Main prints every
// usage error and the help; fail every other refusal.
package cli

import (
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/cli/views"
	"poolc.dev/poolc/compiler/cuefront"
	"poolc.dev/poolc/internal/profiling"
)

// Exit codes every command keeps.
const (
	// ExitOK means the command did what it was asked and found nothing wrong.
	ExitOK = 0
	// ExitError means findings (invalid configuration, unformatted files)
	// or an error, including bad usage.
	ExitError = 1
)

// Stdio is where a command reads and writes, and how it shows findings.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
	// diags is how writeDiagnostics shows findings; a command that
	// writes JSON sets it once, so that every refusal, from any depth,
	// comes out in the same form.
	diags views.DiagForm
}

// command is one poolc subcommand: its help, its arguments and the code
// that runs it. The table of them is commands.go.
type command struct {
	name    string
	args    string // the argument synopsis
	summary string // one line for the command list; "" hides the command
	help    string // what it does, how to use it, its exit codes
	// arguments returns the command's empty arguments, to parse into.
	arguments func() arguments.Arguments
	// run carries the command out with its parsed arguments.
	run func(a arguments.Arguments, io Stdio) int
}

// newCommand is the command that parses its command line into an A and
// runs run with it.
func newCommand[A any, PA interface {
	*A
	arguments.Arguments
}](name, args, summary, help string, run func(PA, Stdio) int) *command {
	return &command{name: name, args: args, summary: summary, help: help,
		arguments: func() arguments.Arguments { return PA(new(A)) },
		run:       func(a arguments.Arguments, io Stdio) int { return run(a.(PA), io) }}
}

// Main runs poolc with the given arguments (without the program name) and
// returns the exit code. It is the only place errors are printed.
func Main(args []string, io Stdio) int {
	if len(args) == 0 {
		writeUsage(io.Err)
		return ExitError
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 1 {
			name := strings.Join(args[1:], " ")
			if c, ok := commands[name]; ok {
				return run(c, []string{"--help"}, io)
			}
			if len(subcommands(name)) > 0 {
				writeGroupUsage(io.Out, name)
				return ExitOK
			}
			fmt.Fprintf(io.Err, "poolc: unknown command %q\n", args[1])
			return ExitError
		}
		writeUsage(io.Out)
		return ExitOK
	case "--version":
		args[0] = "version"
	}
	for n := min(3, len(args)); n > 1; n-- { // "state show", "node token create"
		if name := strings.Join(args[:n], " "); commands[name] != nil {
			args = append([]string{name}, args[n:]...)
			break
		}
	}
	c, ok := commands[args[0]]
	if !ok && len(subcommands(args[0])) > 0 {
		if len(args) > 1 && (args[1] == "--help" || args[1] == "-h" || args[1] == "-help") {
			writeGroupUsage(io.Out, args[0])
			return ExitOK
		}
		if len(args) > 1 {
			fmt.Fprintf(io.Err, "poolc %s: unknown command %q\n\n", args[0], args[1])
		}
		writeGroupUsage(io.Err, args[0])
		return ExitError
	}
	if !ok {
		fmt.Fprintf(io.Err, "poolc: unknown command %q; run 'poolc --help' for the list\n", args[0])
		return ExitError
	}
	return run(c, args[1:], io)
}

func run(c *command, args []string, io Stdio) int {
	a := c.arguments()
	fs := arguments.FlagSet(c.name, a)
	err := arguments.Parse(fs, a, args)
	switch {
	case arguments.IsHelp(err):
		writeCommandHelp(io.Out, c, fs)
		return ExitOK
	case err != nil:
		fmt.Fprintf(io.Err, "poolc %s: %v\nRun 'poolc %s --help' for usage.\n", c.name, err, c.name)
		return ExitError
	}
	if l, ok := a.(arguments.Loader); ok {
		cuefront.MaxEvalTime = l.Limits().CUETimeout
	}
	return c.run(a, io)
}

func writeUsage(w io.Writer) {
	fmt.Fprint(w, `poolc runs fleets of machines serving local LLMs and pools of k3d clusters,
described in CUE or HCL: it validates the description, plans the
make-before-break steps that take the fleet there, carries them out through
actuator plugins, and simulates failures and demand before you merge.

Usage:
  poolc <command> [flags] [PATH...]

Commands:
`)
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if c.summary != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	writeCommands(w, names)
	fmt.Fprintf(w, `
PATH is a .cue or .hcl file or a directory of them (default: the current
directory). The files of one pool are in one language and declare one pool.

Exit codes: 0 success, 1 findings or an error.
Run 'poolc <command> --help' for a command's flags and examples.

%s=FILE and %s=FILE write a CPU and a heap profile of
any command, for a bug report (go tool pprof reads them); the other
environment variables poolc reads are in docs/operations.md.
`, profiling.CPUEnv, profiling.MemEnv)
}

// subcommands are the commands of a group ("state" has "state show",
// "state list"), sorted.
func subcommands(group string) []string {
	var out []string
	for n, c := range commands {
		if strings.HasPrefix(n, group+" ") && c.summary != "" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// writeGroupUsage lists a group's subcommands, for the group typed alone.
func writeGroupUsage(w io.Writer, group string) {
	fmt.Fprintf(w, "Usage: poolc %s <command> [flags] [PATH...]\n\nCommands:\n", group)
	writeCommands(w, subcommands(group))
	fmt.Fprintf(w, "\nRun 'poolc %s <command> --help' for a command's flags and examples.\n", group)
}

// writeCommands lists the named commands and their summaries, in a
// column as wide as the longest name.
func writeCommands(w io.Writer, names []string) {
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, commands[n].summary)
	}
}

func writeCommandHelp(w io.Writer, c *command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "Usage: poolc %s [flags] %s\n\n%s\n", c.name, c.args, strings.TrimSpace(c.help))
	if fs.HasFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
	}
}

// Version is poolc's module version, as documents record it: a tag or
// pseudo-version under `go install`, else "devel".
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// buildVersion is what `poolc version` prints: Version and, when the build
// stamped it, the VCS revision, its time and whether the tree had
// uncommitted changes.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Version() + " (no build information)"
	}
	return versionOf(bi)
}

// versionOf is buildVersion for the given build information.
func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	rev := settings["vcs.revision"]
	if rev == "" {
		return v + " (no VCS revision: built outside a checkout or with -buildvcs=false)"
	}
	v += " (" + settings["vcs"] + " " + rev
	if t := settings["vcs.time"]; t != "" {
		v += ", " + t
	}
	if settings["vcs.modified"] == "true" {
		v += ", modified"
	}
	return v + ")"
}

const versionHelp = `Prints poolc's version: the module version (a tag or pseudo-version when
installed with 'go install', "devel" in a build from a checkout), then the
VCS revision it was built from, that commit's time, and "modified" when the
tree had uncommitted changes. Go stamps the revision unless the build ran
with -buildvcs=false or outside a checkout.

  $ poolc version
  poolc devel (git 487f9b2733c7fb1f8b20334c5241678e4158e0e5, 2026-12-01T10:48:07Z)`

func runVersion(_ *arguments.Version, io Stdio) int {
	views.Version(io.Out, buildVersion())
	return ExitOK
}
