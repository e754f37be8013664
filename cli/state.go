package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/compiler/render"
	"poolc.dev/poolc/orchestrate"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store"
)

// stateFlags are the flags of commands that work on a pool's state.
type stateFlags struct {
	path *string
}

func addStateFlags(fs *pflag.FlagSet) stateFlags {
	return stateFlags{path: fs.String("state", "", "state file (default: the pool's own backend, from its configuration)")}
}

// open finds the state: the file --state names, else the backend of the
// configuration's state block.
func (f stateFlags) open(args []string) (store.Backend, error) {
	if *f.path != "" {
		return store.Open(*f.path), nil
	}
	cfg, diags := compiler.Load(args)
	if cfg == nil || cfg.Pool == nil {
		return nil, fmt.Errorf("finding the state through the configuration:\n%v", diags.Err())
	}
	return orchestrate.OpenState(cfg, "")
}

func init() {
	register(&command{
		name:    "state show",
		args:    "[PATH...]",
		summary: "print the current state of the pool",
		help: `Prints the state poolc keeps for the pool: lineage and serial, then one
line per node, lane process, route, weights file and pod-pool member, as
the state diff of a plan shows them; then, for each lane process whose
actuator reports it, what the last refresh read of it on its node: its
pid, resident memory (rss), the declared and estimated memory of its
model in the configuration (as plan decides them) and its own command
line. poolc plan warns of a process more than 10% above the memory its
model is assumed to take. --format json prints the state file's own JSON.

Exit codes: 0 success, 1 the state cannot be read.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			sf := addStateFlags(fs)
			format := fs.String("format", "text", "output format: text or json")
			return func(args []string, io Stdio) int {
				st, err := readState(sf, args)
				if err != nil {
					fmt.Fprintf(io.Err, "poolc state show: %v\n", err)
					return ExitError
				}
				if *format == "json" {
					data, err := st.Marshal()
					if err != nil {
						fmt.Fprintf(io.Err, "poolc state show: %v\n", err)
						return ExitError
					}
					io.Out.Write(data)
					return ExitOK
				}
				if st.Lineage == "" {
					fmt.Fprintln(io.Out, "No state: nothing has been applied to this pool yet ('poolc apply' records what it does).")
					return ExitOK
				}
				fmt.Fprintf(io.Out, "# pool %s, lineage %s, serial %d\n%s", orDash(st.Pool), orDash(st.Lineage), st.Serial, render.StateText(st.Fleet))
				if obs := render.ObservedText(st.Fleet, configuredPool(sf, args)); obs != "" {
					fmt.Fprintf(io.Out, "# as the last refresh read them on the nodes\n%s", obs)
				}
				return ExitOK
			}
		},
	})
	register(&command{
		name:    "state list",
		args:    "[PATH...]",
		summary: "list the addresses of what the state holds",
		help: `Lists one address per line: lane.NAME@NODE, route.ALIAS, weights.MODEL@NODE,
member.POOL/CONTEXT. A lane replaced on its node runs two processes there for a
while, listed as lane.NAME@NODE:PORT; a model with two weights files on a node
(new weights staged beside the old) lists them as weights.MODEL@NODE:PATH.
For scripts: grep, wc -l, xargs.

Exit codes: 0 success, 1 the state cannot be read.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			sf := addStateFlags(fs)
			return func(args []string, io Stdio) int {
				st, err := readState(sf, args)
				if err != nil {
					fmt.Fprintf(io.Err, "poolc state list: %v\n", err)
					return ExitError
				}
				count := map[string]int{}
				for _, l := range st.Lanes {
					count["lane."+l.Name+"@"+l.Node]++
				}
				for _, p := range st.Prefetched {
					count["weights."+p.Model+"@"+p.Node]++
				}
				for _, l := range st.Lanes {
					a := "lane." + l.Name + "@" + l.Node
					if count[a] > 1 {
						a += fmt.Sprintf(":%d", l.Port)
					}
					fmt.Fprintln(io.Out, a)
				}
				for _, r := range st.Routes {
					fmt.Fprintf(io.Out, "route.%s\n", r.Alias)
				}
				for _, p := range st.Prefetched {
					a := "weights." + p.Model + "@" + p.Node
					if count[a] > 1 {
						a += ":" + p.Path
					}
					fmt.Fprintln(io.Out, a)
				}
				for _, m := range st.Members {
					fmt.Fprintf(io.Out, "member.%s\n", m.Key())
				}
				return ExitOK
			}
		},
	})
	register(&command{
		name:    "force-unlock",
		args:    "LOCK_ID [PATH...]",
		summary: "remove a state lock left by a process that is gone",
		help: `Removes the state lock whose ID is LOCK_ID, as printed by the command that
found the state locked. Only for a lock whose holder is gone: poolc takes
over a lock left by a dead process of the same machine by itself, but
cannot check another machine. On the etcd backend a dead holder's lock
lapses by itself lease_ttl seconds after its last heartbeat; force-unlock
revokes the lease at once, and the holder, if it still runs, can write
nothing more.

Exit codes: 0 unlocked, 1 no lock, another lock ID, or an error.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			sf := addStateFlags(fs)
			return func(args []string, io Stdio) int {
				if len(args) < 1 {
					fmt.Fprintln(io.Err, "poolc force-unlock: want the LOCK_ID\nRun 'poolc force-unlock --help' for usage.")
					return ExitError
				}
				b, err := sf.open(args[1:])
				if err == nil {
					err = b.ForceUnlock(args[0])
					b.Close()
				}
				if err != nil {
					fmt.Fprintf(io.Err, "poolc force-unlock: %v\n", err)
					return ExitError
				}
				fmt.Fprintf(io.Out, "Unlocked %s.\n", b)
				return ExitOK
			}
		},
	})
}

func readState(sf stateFlags, args []string) (*pools.State, error) {
	b, err := sf.open(args)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return b.Read()
}

// configuredPool is the pool of the configuration at args, its models'
// memory decided and checked as plan does, for state show to set beside
// what it observed; nil when the state is named by --state alone or the
// configuration does not load.
func configuredPool(sf stateFlags, args []string) *pools.Pool {
	if *sf.path != "" && len(args) == 0 {
		return nil
	}
	cfg, diags := compiler.LoadWith(args, memoryChecked(false))
	if cfg == nil || diags.HasErrors() {
		return nil
	}
	return cfg.Pool
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
