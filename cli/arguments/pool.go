package arguments

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"poolc.dev/poolc/plugins/haproxy"
	"poolc.dev/poolc/runner"
)

// Version is poolc version, which takes nothing.
type Version struct{ none }

// Positional ignores the arguments.
func (*Version) Positional([]string, int) error { return nil }

// Fmt is poolc fmt [--check] [PATH...].
type Fmt struct {
	Paths
	// Check lists the files that are not formatted and changes none.
	Check bool
}

// Flags declares --check.
func (a *Fmt) Flags(fs *pflag.FlagSet) {
	fs.BoolVar(&a.Check, "check", false, "list files that are not formatted, change nothing, exit 1 if any")
}

// Validate is poolc validate [PATH...].
type Validate struct {
	Paths
	Load
	Format                      string
	Verbose, NoColor, Plugins   bool
	AllowUnpinned, StrictMemory bool
}

// Flags declares validate's flags.
func (a *Validate) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&a.Format, "format", "text", "output format: text or json")
	fs.BoolVarP(&a.Verbose, "verbose", "v", false, "print a one-line summary when the pool is valid")
	fs.BoolVar(&a.NoColor, "no-color", false, "no colors in findings (also when NO_COLOR is set); colored only on a terminal")
	fs.BoolVar(&a.Plugins, "plugins", true, "start the plugins to check their config blocks and the kinds their targets need")
	allowUnpinned(fs, &a.AllowUnpinned)
	fs.BoolVar(&a.StrictMemory, "strict-memory", false, "a model's memory_gb below its GGUF estimate is an error, not a warning")
	a.Load.flags(fs)
}

func allowUnpinned(fs *pflag.FlagSet, v *bool) {
	fs.BoolVar(v, "allow-unpinned", false, "start declared plugins whose binaries lie inside the repository, pinned or not")
}

func noColor(fs *pflag.FlagSet, v *bool) {
	fs.BoolVar(v, "no-color", false, "no colors in text output (also when NO_COLOR is set)")
}

// Plan is poolc plan [PATH...].
type Plan struct {
	Paths
	Load
	// State is the state file to plan from; "" is the pool's own.
	State string
	// Base, when set, is the configuration to plan from instead of
	// the state.
	Base, AssumeDown []string
	// Out is where the plan is saved too; "" saves none.
	Out, Format                  string
	DetailedExitcode, NoColor    bool
	Refresh, Lock, AllowUnpinned bool
	LockTimeout, ObserveTimeout  time.Duration
}

// Flags declares plan's flags.
func (a *Plan) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&a.State, "state", "", "state file to plan from (default: the pool's own)")
	fs.StringArrayVar(&a.Base, "base", nil, "plan from the configuration at this path instead of from the state (repeatable)")
	fs.StringArrayVar(&a.AssumeDown, "assume-down", nil, "treat this node as down (repeatable)")
	fs.StringVar(&a.Out, "out", "", "also save the plan to this file, for poolc show and apply")
	fs.StringVar(&a.Format, "format", "text", "output format: text, json or markdown")
	fs.BoolVar(&a.DetailedExitcode, "detailed-exitcode", false, "exit 2 when the plan has changes, 0 when it has none")
	noColor(fs, &a.NoColor)
	fs.BoolVar(&a.Refresh, "refresh", true, "refresh the state from what the plugins observe before planning")
	fs.BoolVar(&a.Lock, "lock", true, "hold the state's lock while reading it")
	fs.DurationVar(&a.LockTimeout, "lock-timeout", 0, "wait this long for another operation's lock (0: fail at once)")
	fs.DurationVar(&a.ObserveTimeout, "observe-timeout", runner.DefaultStepTimeout, "time limit of the refresh")
	allowUnpinned(fs, &a.AllowUnpinned)
	a.Load.flags(fs)
}

// PlanFormat checks an output format of a plan: text, json or markdown.
func PlanFormat(format string) error {
	switch format {
	case "text", "json", "markdown":
		return nil
	}
	return fmt.Errorf("unknown --format %q: want text, json or markdown", format)
}

// Show is poolc show PLANFILE.
type Show struct {
	PlanFile string
	Format   string
	NoColor  bool
}

// Flags declares show's flags.
func (a *Show) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&a.Format, "format", "text", "output format: text, json or markdown")
	noColor(fs, &a.NoColor)
}

// Positional takes the one PLANFILE.
func (a *Show) Positional(args []string, _ int) error {
	if len(args) != 1 {
		return fmt.Errorf("want one PLANFILE, got %d arguments", len(args))
	}
	a.PlanFile = args[0]
	return nil
}

// Apply is poolc apply [PLANFILE | PATH...]: the paths are a saved plan
// when they are one file that is not a pool file (the cli decides, as
// it needs the file system).
type Apply struct {
	Paths
	Load
	AutoApprove, AllowInterruption, RetryUncertain bool
	Refresh, JSON, NoColor                         bool
	AssumeDown                                     []string
	LockTimeout, StepTimeout                       time.Duration
	Parallelism, Retries                           int
	State                                          string
}

// Flags declares apply's flags.
func (a *Apply) Flags(fs *pflag.FlagSet) {
	fs.BoolVar(&a.AutoApprove, "auto-approve", false, "do not ask for confirmation (required when not on a terminal)")
	fs.BoolVar(&a.AllowInterruption, "allow-interruption", false, "carry out a plan that leaves an alias unserved for a while")
	fs.BoolVar(&a.RetryUncertain, "retry-uncertain", false, "send again the steps a killed apply left that may have run (see above)")
	fs.BoolVar(&a.Refresh, "refresh", true, "refresh the state from the plugins before planning")
	fs.StringArrayVar(&a.AssumeDown, "assume-down", nil, "treat this node as down, also when it cannot be observed (repeatable)")
	fs.DurationVar(&a.LockTimeout, "lock-timeout", 0, "wait this long for another apply's lock (0: fail at once)")
	fs.IntVar(&a.Parallelism, "parallelism", runner.DefaultParallelism, "steps in flight at once")
	fs.DurationVar(&a.StepTimeout, "step-timeout", runner.DefaultStepTimeout, "time limit of one attempt of a step")
	fs.IntVar(&a.Retries, "retries", runner.DefaultRetries, "retries of a step that fails retryably")
	fs.StringVar(&a.State, "state", "", "state file (default: the pool's own)")
	fs.BoolVar(&a.JSON, "json", false, "print a JSON event per line instead of the plan and progress")
	noColor(fs, &a.NoColor)
	a.Load.flags(fs)
}

// RunnerRetries is --retries as runner.Options.Retries takes it, where 0
// means the default and a negative number none.
func (a *Apply) RunnerRetries() int {
	if a.Retries == 0 {
		return -1
	}
	return a.Retries
}

// Plugins is poolc plugins [PATH...].
type Plugins struct {
	Paths
	Load
	AllowUnpinned bool
}

// Flags declares plugins' flags.
func (a *Plugins) Flags(fs *pflag.FlagSet) {
	allowUnpinned(fs, &a.AllowUnpinned)
	a.Load.flags(fs)
}

// Simulate is poolc simulate.
type Simulate struct {
	Paths
	Load
	Scenario, Mode, Format, Print string
	List, Progress                bool
	Base                          []string
	Seed                          uint64
	Duration                      time.Duration
}

// Flags declares simulate's flags.
func (a *Simulate) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&a.Scenario, "scenario", "", "reference scenario NAME or scenario FILE (required)")
	fs.BoolVar(&a.List, "list", false, "list the reference scenarios and exit")
	fs.StringVar(&a.Print, "print", "", "write the reference scenario NAME to standard output and exit")
	fs.StringArrayVar(&a.Base, "base", nil, "also run the configuration at this path and lead with head minus base (repeatable: one configuration in several paths)")
	fs.StringVar(&a.Mode, "mode", "auto", "controller mode: off, advise, auto or all")
	fs.Uint64Var(&a.Seed, "seed", 0, "random seed (default: the scenario's)")
	fs.DurationVar(&a.Duration, "duration", 0, "simulated time (default: the scenario's)")
	fs.StringVar(&a.Format, "format", "text", "output format: text, json or markdown")
	fs.BoolVar(&a.Progress, "progress", false, "show progress on standard error (on by default on a terminal)")
	a.Load.flags(fs)
}

// GatewayConfig is poolc gateway config [PATH...].
type GatewayConfig struct {
	Paths
	Format, Bind, Cloud, MapOut string
}

// Flags declares gateway config's flags.
func (a *GatewayConfig) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&a.Format, "format", "haproxy", "the gateway's kind (only haproxy)")
	fs.StringVar(&a.Bind, "bind", "", "the address the gateway listens on, IP:PORT (default: the plugin's bind, else "+haproxy.DefaultBind+")")
	fs.StringVar(&a.Cloud, "cloud", "", "the hosted fallback as host:port (TLS); default: the plugin's cloud; empty answers 503")
	fs.StringVar(&a.MapOut, "map-out", "", "write the initial map file here, and its fallback map beside it (FILE.fallbacks)")
}
