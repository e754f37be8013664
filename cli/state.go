package cli

import (
	"fmt"

	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/cli/views"
	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/orchestrate"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store"
)

// openState finds the state: the file --state names, else the backend
// of the configuration's state block.
func openState(file string, paths []string) (store.Backend, error) {
	if file != "" {
		return store.Open(file), nil
	}
	cfg, diags := compiler.Load(paths)
	if cfg == nil || cfg.Pool == nil {
		return nil, fmt.Errorf("finding the state through the configuration:\n%v", diags.Err())
	}
	return orchestrate.OpenState(cfg, "")
}

const stateShowHelp = `Prints the state poolc keeps for the pool: lineage and serial, then one
line per node, lane process, route, weights file and pod-pool member, as
the state diff of a plan shows them; then, for each lane process whose
actuator reports it, what the last refresh read of it on its node: its
pid, resident memory (rss), the declared and estimated memory of its
model in the configuration (as plan decides them) and its own command
line. poolc plan warns of a process more than 10% above the memory its
model is assumed to take. --format json prints the state file's own JSON.

Exit codes: 0 success, 1 the state cannot be read.`

const stateListHelp = `Lists one address per line: lane.NAME@NODE, route.ALIAS, weights.MODEL@NODE,
member.POOL/CONTEXT. A lane replaced on its node runs two processes there for a
while, listed as lane.NAME@NODE:PORT; a model with two weights files on a node
(new weights staged beside the old) lists them as weights.MODEL@NODE:PATH.
For scripts: grep, wc -l, xargs.

Exit codes: 0 success, 1 the state cannot be read.`

const forceUnlockHelp = `Removes the state lock whose ID is LOCK_ID, as printed by the command that
found the state locked. Only for a lock whose holder is gone: poolc takes
over a lock left by a dead process of the same machine by itself, but
cannot check another machine. On the etcd backend a dead holder's lock
lapses by itself lease_ttl seconds after its last heartbeat; force-unlock
revokes the lease at once, and the holder, if it still runs, can write
nothing more.

Exit codes: 0 unlocked, 1 no lock, another lock ID, or an error.`

func runStateShow(a *arguments.StateShow, io Stdio) int {
	st, err := readState(a.State.State, a.Paths.Paths)
	if err == nil {
		if a.Format == "json" {
			err = views.StateJSON(io.Out, st)
		} else {
			views.State(io.Out, st, func() *pools.Pool { return configuredPool(a.State.State, a.Paths.Paths) })
		}
	}
	if err != nil {
		return fail(io, "state show", err.Error())
	}
	return ExitOK
}

func runStateList(a *arguments.StateList, io Stdio) int {
	st, err := readState(a.State.State, a.Paths.Paths)
	if err != nil {
		return fail(io, "state list", err.Error())
	}
	views.StateAddresses(io.Out, stateAddresses(st))
	return ExitOK
}

// stateAddresses are the addresses of what st holds: lanes, routes,
// weights files, members. A lane with two processes on its node is told
// apart by port, a model with two weights files there by path.
func stateAddresses(st *pools.State) []string {
	count := map[string]int{}
	for _, l := range st.Lanes {
		count["lane."+l.Name+"@"+l.Node]++
	}
	for _, p := range st.Prefetched {
		count["weights."+p.Model+"@"+p.Node]++
	}
	var out []string
	for _, l := range st.Lanes {
		a := "lane." + l.Name + "@" + l.Node
		if count[a] > 1 {
			a += fmt.Sprintf(":%d", l.Port)
		}
		out = append(out, a)
	}
	for _, r := range st.Routes {
		out = append(out, "route."+r.Alias)
	}
	for _, p := range st.Prefetched {
		a := "weights." + p.Model + "@" + p.Node
		if count[a] > 1 {
			a += ":" + p.Path
		}
		out = append(out, a)
	}
	for _, m := range st.Members {
		out = append(out, "member."+m.Key())
	}
	return out
}

func runForceUnlock(a *arguments.ForceUnlock, io Stdio) int {
	b, err := openState(a.State.State, a.Paths)
	if err == nil {
		err = b.ForceUnlock(a.LockID)
		b.Close()
	}
	if err != nil {
		return fail(io, "force-unlock", err.Error())
	}
	views.Unlocked(io.Out, b)
	return ExitOK
}

func readState(file string, paths []string) (*pools.State, error) {
	b, err := openState(file, paths)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return b.Read()
}

// configuredPool is the pool of the configuration at paths, its models'
// memory decided and checked as plan does, for state show to set beside
// what it observed; nil when the state is named by --state alone or the
// configuration does not load.
func configuredPool(file string, paths []string) *pools.Pool {
	if file != "" && len(paths) == 0 {
		return nil
	}
	cfg, diags := compiler.LoadWith(paths, memoryChecked(false))
	if cfg == nil || diags.HasErrors() {
		return nil
	}
	return cfg.Pool
}
