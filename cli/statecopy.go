package cli

import (
	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/cli/views"
	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/orchestrate"
	"poolc.dev/poolc/runner/store"
)

const statePushHelp = `Copies the state in FILE (with what its journal says finished after its
last snapshot) into the backend the pool's state block names, keeping its
lineage: the way a team moves from the file backend to etcd. Both states
are locked for the copy.

The copy is refused when the backend holds a state of another lineage, or
of the same lineage at a later serial (it would go back); --force copies
anyway. A state of another pool is always refused.

Examples:
  poolc state push poolc.state.json pools/

Exit codes: 0 copied, 1 refused or an error.`

const statePullHelp = `Reads the state from the backend the pool's state block names (with what
its journal says finished after its last snapshot) and prints its JSON, or
with --out copies it into that state file, keeping its lineage: a backup,
or the way back from etcd to the file backend. With --out both states are
locked for the copy, and the same rules as state push apply.

Examples:
  poolc state pull pools/ > backup.json
  poolc state pull --out poolc.state.json pools/

Exit codes: 0 success, 1 refused or an error.`

func runStatePush(a *arguments.StatePush, io Stdio) int {
	return copyState(io, "state push", a.Paths, a.Copy, func(cfg *compiler.Config) (from, to store.Backend, err error) {
		to, err = orchestrate.OpenState(cfg, "")
		return store.Open(a.File), to, err
	})
}

func runStatePull(a *arguments.StatePull, io Stdio) int {
	if a.Out != "" {
		return copyState(io, "state pull", a.Paths.Paths, a.Copy, func(cfg *compiler.Config) (from, to store.Backend, err error) {
			from, err = orchestrate.OpenState(cfg, "")
			return from, store.Open(a.Out), err
		})
	}
	st, err := readState("", a.Paths.Paths)
	if err == nil {
		err = views.StateJSON(io.Out, st)
	}
	if err != nil {
		return fail(io, "state pull", err.Error())
	}
	return ExitOK
}

// copyState copies the state of the configuration at paths between the
// backends open gives (store.Copy) and says what it copied.
func copyState(io Stdio, name string, paths []string, o arguments.Copy, open func(*compiler.Config) (from, to store.Backend, err error)) int {
	cfg, diags := compiler.Load(paths)
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
	var c *store.Copied
	if err == nil {
		c, err = store.Copy(store.CopyRequest{From: from, To: to, Pool: cfg.Pool.Name, Operation: name, Version: Version(),
			LockTimeout: o.LockTimeout, Force: o.Force})
	}
	if err != nil {
		return fail(io, name, err.Error())
	}
	views.StateCopied(io.Out, cfg.Pool.Name, from, to, c)
	return ExitOK
}
