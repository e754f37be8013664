// Package arguments parses the command line of each poolc command into
// one struct, and does nothing else: no file is read, no stream written,
// no global changed, so every flag's default and every refusal is tested
// without running a command. The cli package holds the table of commands
// that pairs each struct with its help and the code that runs it.
package arguments

import (
	"errors"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"poolc.dev/poolc/compiler/cuefront"
)

// Arguments is the parsed command line of one command.
type Arguments interface {
	// Flags declares the command's flags on fs, bound to the fields
	// that hold their values.
	Flags(fs *pflag.FlagSet)
	// Positional takes the arguments left after the flags; dash is the
	// index among them of the first one after "--", or -1. An error is
	// a usage error: the command was called wrongly.
	Positional(args []string, dash int) error
}

// ErrHelp is what Parse returns when the command line asks for help.
var ErrHelp = pflag.ErrHelp

// FlagSet is the flag set of a command: a's flags, sorted as declared,
// with no output of their own.
func FlagSet(name string, a Arguments) *pflag.FlagSet {
	fs := pflag.NewFlagSet("poolc "+name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.Usage = func() {}
	a.Flags(fs)
	return fs
}

// Parse parses the command line args of command name into a, which
// FlagSet made fs of. Long flags written with one dash (-out=p) are
// taken as with two. It returns ErrHelp for -h and --help.
func Parse(fs *pflag.FlagSet, a Arguments, args []string) error {
	if err := fs.Parse(singleDashLong(fs, args)); err != nil {
		return err
	}
	return a.Positional(fs.Args(), fs.ArgsLenAtDash())
}

// IsHelp reports whether err asks for the command's help.
func IsHelp(err error) bool { return errors.Is(err, ErrHelp) }

// singleDashLong rewrites long flags written with one dash, as Terraform
// users type them (-out=p, -auto-approve), to pflag's two. Only an
// argument naming a flag of fs with more than one letter is rewritten, so
// shorthands (-v) keep their meaning; values of flags that take one, and
// everything after --, are left alone.
func singleDashLong(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		out = append(out, a)
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		var f *pflag.Flag
		switch {
		case strings.HasPrefix(a, "--"):
			f = fs.Lookup(name)
		case len(name) > 1 && fs.Lookup(name) != nil:
			f = fs.Lookup(name)
			out[len(out)-1] = "-" + a
		case len(name) == 1:
			f = fs.ShorthandLookup(name)
		}
		// A flag that takes a value and has none after = takes the next
		// argument, whatever it looks like.
		if f != nil && !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// Paths are the positional arguments of a command that reads a pool:
// files and directories, none meaning the current directory.
type Paths struct {
	Paths []string
}

// Positional takes every argument as a path.
func (p *Paths) Positional(args []string, _ int) error {
	p.Paths = args
	return nil
}

// first splits NAME [PATH...]: the first argument and the paths after
// it; without one it refuses with want ("want the node's NAME").
func first(args []string, want string) (string, []string, error) {
	if len(args) < 1 {
		return "", nil, errors.New(want)
	}
	return args[0], args[1:], nil
}

// Load is the flag of the commands that load a pool a pull request may
// bring.
type Load struct {
	// CUETimeout bounds the evaluation of a CUE pool that is not plain
	// data.
	CUETimeout time.Duration
}

func (l *Load) flags(fs *pflag.FlagSet) {
	fs.DurationVar(&l.CUETimeout, "cue-timeout", cuefront.DefaultEvalTime,
		"time limit of evaluating a CUE pool that is not plain data; past it the pool is refused (too-slow)")
}

// none takes no flags.
type none struct{}

// Flags declares no flag.
func (none) Flags(*pflag.FlagSet) {}

// Loader is the arguments of a command that loads a pool a pull request
// may bring.
type Loader interface {
	// Limits are the bounds of loading the pool.
	Limits() Load
}

// Limits are the bounds of loading the pool.
func (l Load) Limits() Load { return l }
