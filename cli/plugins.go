package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/plugins/builtin"
	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

func init() {
	register(&command{
		name:    "plugins",
		args:    "[PATH...]",
		summary: "list the actuator plugins a pool uses and those found",
		help: `Starts the plugins the pool declares and lists each with its version, the
step kinds it handles, the binary that runs it and that binary's sha256 (the
value to pin it with). Then lists the built-in actuators and the plugin
binaries found on the plugin path (.poolc/plugins beside the pool, then
$POOLC_PLUGIN_PATH) that the pool does not declare.

Exit codes: 0 success, 1 a declared plugin cannot be started, or an error.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			return func(args []string, io Stdio) int {
				cfg, diags := compiler.Load(args)
				if diags.HasErrors() {
					writeDiagnostics(io, diags)
					return ExitError
				}
				set, pdiags := host.Start(context.Background(), cfg.Pool, host.Options{WorkDir: cfg.Dir(), Stderr: io.Err})
				cfg.Sources.Attach(pdiags)
				writeDiagnostics(io, pdiags)
				if set == nil {
					return ExitError
				}
				defer set.Close()
				tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSTATUS\tVERSION\tSTEP KINDS\tSERVES\tBINARY\tSHA256")
				declared := map[string]bool{}
				for _, info := range set.Plugins() {
					declared[info.Name] = true
					status := "declared"
					switch d := declaration(cfg.Pool, info.Name); {
					case info.Implicit:
						status = "built-in default"
					case d != nil && d.SHA256 != "":
						status = "declared, pinned"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", info.Name, status, orDash(info.Version), kindList(info.Kinds),
						orDash(strings.Join(info.Targets, ", ")), orDash(info.Path), orDash(info.SHA256))
				}
				for _, name := range builtin.Names() {
					if !declared[name] {
						fmt.Fprintf(tw, "%s\tbuilt-in, not declared\t-\t-\t-\t-\t-\n", name)
					}
				}
				for _, found := range onPluginPath(cfg.Dir()) {
					if !declared[found.name] {
						fmt.Fprintf(tw, "%s\tfound, not declared\t-\t-\t-\t%s\t-\n", found.name, found.path)
					}
				}
				tw.Flush()
				return ExitOK
			}
		},
	})
}

func declaration(p *pools.Pool, name string) *pools.Plugin {
	for i := range p.Plugins {
		if p.Plugins[i].Name == name {
			return &p.Plugins[i]
		}
	}
	return nil
}

func kindList(kinds []sdk.StepKind) string {
	if len(kinds) == len(sdk.AllStepKinds()) {
		return "all"
	}
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ",")
}

type foundPlugin struct{ name, path string }

// onPluginPath lists the plugin binaries on the plugin path, the first of
// each name.
func onPluginPath(workDir string) []foundPlugin {
	seen := map[string]bool{}
	var out []foundPlugin
	prefix := strings.TrimSuffix(host.BinaryName("x"), "x")
	for _, dir := range host.DefaultPluginPath(workDir) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			name, ok := strings.CutPrefix(e.Name(), prefix)
			if !ok || e.IsDir() || seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, foundPlugin{name: name, path: filepath.Join(dir, e.Name())})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
