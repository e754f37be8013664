package cli

import (
	"context"
	"io"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/plugins/builtin"
	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// inspectPlugins sets up a pool's plugins for a command that only reads
// what they say of themselves (their version, step kinds and config
// schema: poolc plugins, poolc validate), so reading a checkout runs none
// of its code: a built-in plugin is asked in this process, without a
// process of its own, and unless allowUnpinned, a declared plugin that is
// not pinned by sha256 and whose binary lies inside the repository
// (repositoryOf) is not started, and a warning at its declaration says
// so, with the sha256 to pin it with. Plugin output goes to stderr. The
// caller closes the set, which is nil when the diagnostics hold an error.
func inspectPlugins(cfg *compiler.Config, allowUnpinned bool, stderr io.Writer) (*host.Set, pools.Diagnostics) {
	opts := host.Options{WorkDir: cfg.Dir(), Stderr: stderr,
		Builtin: func(name string) (sdk.Actuator, bool) { return builtin.New(name, Version()) }}
	if !allowUnpinned {
		opts.UnpinnedInside = repositoryOf(cfg.Dir())
	}
	set, diags := host.Start(context.Background(), cfg.Pool, opts)
	if set != nil {
		diags = append(diags, set.NotStarted(pools.Warning, "nothing it would check is checked")...)
	}
	cfg.Sources.Attach(diags)
	return set, diags
}
