package cli

import (
	"context"
	"fmt"
	"io"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/pools"
)

// inspectPlugins starts a pool's plugins for a command that only reads
// what they say of themselves (their version, step kinds and config
// schema: poolc plugins, poolc validate), so reading a checkout runs none
// of its code. Unless allowUnpinned, a declared plugin that is not pinned
// by sha256 and whose binary lies inside the repository (repositoryOf) is
// not started, and a warning at its declaration says so, with the sha256
// to pin it with. Plugin output goes to stderr. The caller closes the set,
// which is nil when the diagnostics hold an error.
func inspectPlugins(cfg *compiler.Config, allowUnpinned bool, stderr io.Writer) (*host.Set, pools.Diagnostics) {
	opts := host.Options{WorkDir: cfg.Dir(), Stderr: stderr}
	if !allowUnpinned {
		opts.UnpinnedInside = repositoryOf(cfg.Dir())
	}
	set, diags := host.Start(context.Background(), cfg.Pool, opts)
	if set != nil {
		for _, info := range set.Plugins() {
			if info.NotStarted == "" {
				continue
			}
			diags = append(diags, pools.Diagnostic{Severity: pools.Warning, Code: "plugin-not-started", Path: pools.Path{"plugin", info.Name},
				Message: fmt.Sprintf("plugin %s not started: %s, so nothing it would check is checked; pin it with sha256 = %q once you trust it, or pass --allow-unpinned to run it", info.Name, info.NotStarted, info.SHA256)})
		}
	}
	cfg.Sources.Attach(diags)
	return set, diags
}
