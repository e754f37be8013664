package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/orchestrate"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store"
)

func init() {
	register(&command{
		name:    "state push",
		args:    "FILE [PATH...]",
		summary: "copy a state file into the pool's etcd store",
		help: `Copies the state in FILE (with what its journal says finished after its
last snapshot) into the backend the pool's state block names, keeping its
lineage: the way a team moves from the file backend to etcd. Both states
are locked for the copy.

The copy is refused when the backend holds a state of another lineage, or
of the same lineage at a later serial (it would go back); --force copies
anyway. A state of another pool is always refused.

Examples:
  poolc state push poolc.state.json pools/

Exit codes: 0 copied, 1 refused or an error.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			o := addCopyFlags(fs)
			return func(args []string, io Stdio) int {
				if len(args) < 1 {
					fmt.Fprintln(io.Err, "poolc state push: want the FILE to push\nRun 'poolc state push --help' for usage.")
					return ExitError
				}
				return copyState(io, "state push", args[1:], o, func(cfg *compiler.Config) (from, to store.Backend, err error) {
					to, err = orchestrate.OpenState(cfg, "")
					return store.Open(args[0]), to, err
				})
			}
		},
	})
	register(&command{
		name:    "state pull",
		args:    "[PATH...]",
		summary: "print the pool's state, or copy it into a file",
		help: `Reads the state from the backend the pool's state block names (with what
its journal says finished after its last snapshot) and prints its JSON, or
with --out copies it into that state file, keeping its lineage: a backup,
or the way back from etcd to the file backend. With --out both states are
locked for the copy, and the same rules as state push apply.

Examples:
  poolc state pull pools/ > backup.json
  poolc state pull --out poolc.state.json pools/

Exit codes: 0 success, 1 refused or an error.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			o := addCopyFlags(fs)
			out := fs.String("out", "", "copy the state into this state file instead of printing it")
			return func(args []string, io Stdio) int {
				if *out == "" {
					st, err := readState(stateFlags{path: out}, args)
					if err == nil {
						var data []byte
						if data, err = st.Marshal(); err == nil {
							_, err = io.Out.Write(data)
						}
					}
					if err != nil {
						fmt.Fprintf(io.Err, "poolc state pull: %v\n", err)
						return ExitError
					}
					return ExitOK
				}
				return copyState(io, "state pull", args, o, func(cfg *compiler.Config) (from, to store.Backend, err error) {
					from, err = orchestrate.OpenState(cfg, "")
					return from, store.Open(*out), err
				})
			}
		},
	})
}

// copyOptions are the flags of state push and state pull.
type copyOptions struct {
	force       *bool
	lockTimeout *time.Duration
}

func addCopyFlags(fs *pflag.FlagSet) copyOptions {
	return copyOptions{
		force:       fs.Bool("force", false, "copy over a state of another lineage or a later serial"),
		lockTimeout: fs.Duration("lock-timeout", 0, "wait this long for a lock another command holds (0: fail at once)"),
	}
}

// copyState copies the state of the configuration in args from one
// backend to another, both locked, keeping its lineage.
func copyState(io Stdio, name string, args []string, o copyOptions, open func(*compiler.Config) (from, to store.Backend, err error)) int {
	fail := func(err error) int {
		fmt.Fprintf(io.Err, "poolc %s: %v\n", name, err)
		return ExitError
	}
	cfg, diags := compiler.Load(args)
	if diags.HasErrors() {
		writeDiagnostics(io, diags)
		return ExitError
	}
	from, to, err := open(cfg)
	for _, b := range []store.Backend{from, to} {
		if b != nil {
			defer b.Close()
		}
	}
	if err != nil {
		return fail(err)
	}
	if from.String() == to.String() {
		return fail(fmt.Errorf("%s is both the source and the destination: the pool's state block must name another backend", from))
	}
	for _, b := range []store.Backend{from, to} {
		ctx, cancel := context.WithTimeout(context.Background(), *o.lockTimeout)
		l, err := b.Acquire(ctx, store.NewLockInfo(name, Version()), nil)
		cancel()
		if err != nil {
			return fail(err)
		}
		defer l.Unlock()
	}
	st, err := store.ReadPool(from, cfg.Pool.Name)
	if err != nil {
		return fail(err)
	}
	if st.Serial == 0 && st.Lineage == "" {
		return fail(fmt.Errorf("%s holds no state", from))
	}
	was, err := store.ReadPool(to, cfg.Pool.Name)
	if err != nil {
		return fail(err)
	}
	if err := mayReplace(was, st, to); err != nil && !*o.force {
		return fail(fmt.Errorf("%w; pass --force to replace it", err))
	}
	lineage, serial := st.Lineage, st.Serial
	st.Pool = cfg.Pool.Name
	st.Serial = max(st.Serial, was.Serial)
	if err := to.Write(st); err != nil {
		return fail(err)
	}
	// The destination's journal is of the state replaced: start one that
	// says where this state came from.
	j, err := to.BeginJournal(store.NewID())
	if err == nil {
		err = j.End(fmt.Sprintf("%s from %s (lineage %s, serial %d)", name, from, lineage, serial))
	}
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(io.Out, "Copied the state of pool %s from %s (lineage %s, serial %d) to %s (serial %d).\n", cfg.Pool.Name, from, lineage, serial, to, st.Serial)
	return ExitOK
}

// mayReplace says why st should not replace was in to: another lineage,
// or the same lineage further on.
func mayReplace(was, st *pools.State, to store.Backend) error {
	switch {
	case was.Lineage == "" && was.Serial == 0:
		return nil
	case was.Lineage != st.Lineage:
		return fmt.Errorf("%s holds a state of another lineage (%s, serial %d)", to, was.Lineage, was.Serial)
	case was.Serial > st.Serial:
		return fmt.Errorf("%s holds a later state of the same lineage (serial %d > %d): copying would go back", to, was.Serial, st.Serial)
	}
	return nil
}
