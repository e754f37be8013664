package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"poolc.dev/poolc/cli/arguments"
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
	writePluginRows(io.Out, pluginRows(cfg, set))
	return ExitOK
}

// pluginRow is one plugin poolc plugins lists.
type pluginRow struct {
	name, status, version, kinds, serves, binary, sha256 string
}

// pluginRows are the plugins the pool declares (or uses by default), then
// the built-ins and the binaries on the plugin path it does not declare.
func pluginRows(cfg *compiler.Config, set *host.Set) []pluginRow {
	var rows []pluginRow
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
		rows = append(rows, pluginRow{info.Name, status, orDash(info.Version), kindList(info.Kinds),
			orDash(strings.Join(info.Targets, ", ")), orDash(info.Path), orDash(info.SHA256)})
	}
	for _, name := range builtin.Names() {
		if !declared[name] {
			rows = append(rows, pluginRow{name, "built-in, not declared", "-", "-", "-", "-", "-"})
		}
	}
	for _, found := range onPluginPath(cfg.Dir()) {
		if !declared[found.name] {
			rows = append(rows, pluginRow{found.name, "found, not declared", "-", "-", "-", found.path, "-"})
		}
	}
	return rows
}

// writePluginRows is the human view of poolc plugins: a table.
func writePluginRows(w io.Writer, rows []pluginRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tVERSION\tSTEP KINDS\tSERVES\tBINARY\tSHA256")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.name, r.status, r.version, r.kinds, r.serves, r.binary, r.sha256)
	}
	tw.Flush()
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
	switch len(kinds) {
	case 0:
		return "-"
	case len(sdk.AllStepKinds()):
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
