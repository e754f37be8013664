package cli

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/cli/views"
	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/plugins/builtin"
	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

const pluginsHelp = `Starts the plugins the pool declares and lists each with its version, the
step kinds it handles, the binary that runs it and that binary's sha256 (the
value to pin it with). Then lists the built-in actuators and the plugin
binaries found on the plugin path (.poolc/plugins beside the pool, then
$POOLC_PLUGIN_PATH) that the pool does not declare; those are never run.

Listing a checkout runs none of its code: a declared plugin whose binary
lies inside the repository (the nearest directory above the pool holding
.git, else the pool's directory; through a symbolic link or not) is not
started, pinned by sha256 or not, since the pool that pins it lies in the
same repository. It is listed as "unpinned in the repository, not started"
(or "pinned in the repository, ...") with its binary's sha256, read
without running it, and a warning names it. Pass --allow-unpinned to run
it once you trust the binary (it is then listed "declared, unpinned, ran").
Built-in plugins are asked inside poolc, with no process; binaries outside
the repository (on $POOLC_PLUGIN_PATH) are started as plan and apply start
them.

Exit codes: 0 success, 1 a declared plugin cannot be started, or an error.`

func runPlugins(a *arguments.Plugins, io Stdio) int {
	cfg, diags := compiler.Load(a.Paths.Paths)
	if diags.HasErrors() {
		writeDiagnostics(io, diags)
		return ExitError
	}
	set, pdiags := inspectPlugins(cfg, a.AllowUnpinned, io.Err)
	writeDiagnostics(io, pdiags)
	if set == nil {
		return ExitError
	}
	defer set.Close()
	views.Plugins(io.Out, pluginRows(cfg, set))
	return ExitOK
}

// pluginRows are the plugins the pool declares (or uses by default), then
// the built-ins and the binaries on the plugin path it does not declare.
func pluginRows(cfg *compiler.Config, set *host.Set) []views.PluginRow {
	var rows []views.PluginRow
	declared := map[string]bool{}
	for _, info := range set.Plugins() {
		declared[info.Name] = true
		status := "declared"
		switch d := declaration(cfg.Pool, info.Name); {
		case info.NotStarted != "":
			status = "unpinned in the repository, not started" // inspectPlugins warned
			if d != nil && d.SHA256 != "" {
				status = "pinned in the repository, not started"
			}
		case info.Implicit:
			status = "built-in default"
		case d != nil && d.SHA256 != "":
			status = "declared, pinned"
		case d != nil && !d.Builtin:
			status = "declared, unpinned, ran"
		}
		rows = append(rows, views.PluginRow{Name: info.Name, Status: status, Version: info.Version, Kinds: kindList(info.Kinds),
			Serves: strings.Join(info.Targets, ", "), Binary: info.Path, SHA256: info.SHA256})
	}
	for _, name := range builtin.Names() {
		if !declared[name] {
			rows = append(rows, views.PluginRow{Name: name, Status: "built-in, not declared"})
		}
	}
	for _, found := range onPluginPath(cfg.Dir()) {
		if !declared[found.name] {
			rows = append(rows, views.PluginRow{Name: found.name, Status: "found, not declared", Binary: found.path})
		}
	}
	return rows
}

func declaration(p *pools.Pool, name string) *pools.Plugin {
	for i := range p.Plugins {
		if p.Plugins[i].Name == name {
			return &p.Plugins[i]
		}
	}
	return nil
}

// kindList is the step kinds a plugin handles: "all", or a
// comma-separated list ("" for none).
func kindList(kinds []sdk.StepKind) string {
	if len(kinds) > 0 && len(kinds) == len(sdk.AllStepKinds()) {
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

// repositoryOf is the repository a pool's directory lies in: the nearest
// directory at or above dir that holds .git, else dir itself.
func repositoryOf(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return abs
		}
	}
}
