// Package host is poolc's side of its actuator plugins: it starts each
// declared plugin in its own process, checks what it is and configures it,
// routes each step to the plugin serving its target (a node, the gateway,
// a pod pool's members or image sync), and turns
// plugin failures into diagnostics an operator can act on.
//
// Every plugin runs out of process, the built-in ones too (poolc runs
// itself again as `poolc plugin-serve NAME`), so a crashing actuator never
// takes poolc down. The protocol is go-plugin over gRPC with mutual TLS,
// described in docs/PLUGINS.md; its Go side lives in plugins/sdk.
//
// Where an external plugin is found: its declaration's path, relative to
// the pool's directory (a bare file name that is not there is looked for
// on the plugin path too); without a path, a file named poolc-plugin-NAME
// in the first directory of the plugin path that has one (see
// DefaultPluginPath). A declared sha256 pins the binary: poolc refuses to
// run a file with another sum.
//
// Debugging: set POOLC_REATTACH_PLUGINS to a JSON object from plugin name
// to address (sdk.ReattachConfig), as printed by sdk.ServeDebug, and poolc
// talks to that running plugin instead of starting one, and leaves it
// running afterwards:
//
//	POOLC_REATTACH_PLUGINS='{"webhook":{"Protocol":"grpc","ProtocolVersion":2,"Pid":4242,"Test":true,"Addr":{"Network":"unix","String":"/tmp/plugin1234"}}}'
//
// A reattached plugin's sha256 is not checked (there is no binary to
// check), and poolc warns that it was not.
package host

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// Options say where plugins are found and where their output goes.
type Options struct {
	// WorkDir is the directory of the pool's first file. Relative plugin
	// paths and the default plugin path are relative to it, and plugins
	// get it in Configure.
	WorkDir string
	// PluginPath lists the directories searched, in order, for the binary
	// of an external plugin that has no path. Nil means
	// DefaultPluginPath(WorkDir).
	PluginPath []string
	// Self is the command that serves poolc's built-in plugins, to which
	// "plugin-serve", NAME are appended. Nil means this program as it was
	// invoked: os.Args[0], looked up on $PATH when it has no '/', or
	// os.Executable() when that fails.
	Self []string
	// Stderr receives what the plugins write to stderr and stdout, line by
	// line, each prefixed "NAME: ". Nil discards it. go-plugin's own
	// logging never reaches it, except its errors.
	Stderr io.Writer
	// Leaving are the members the state holds that the pool no longer
	// lists (plan.Leaving); each goes in the inventory of its pod pool's
	// cluster plugin, which observes it so its member-remove is planned.
	Leaving []pools.MemberState
	// Left are the state's records of the targets that left the pool and
	// still hold something (pools.State.Left): the plugin each names is
	// started (it must be declared, or be the built-in default), gets the
	// target in its inventory, observes it, and carries out its steps.
	Left []pools.Served
	// UnpinnedInside, when set, is a directory (a repository) whose
	// binaries are not run: an external plugin whose binary lies inside
	// it is not started, even with a sha256 (the pool that pins it lies in
	// the same repository), and Set.Plugins lists
	// it with NotStarted saying so. Commands that only read a pool
	// (validate, plugins, plan) set it, so that reading a checkout runs
	// none of its code. The binary is inside when its path as declared or
	// found lies inside, or the file a symbolic link there leads to does.
	UnpinnedInside string
	// Builtin, when set, makes Start inspect the built-in plugins instead
	// of starting them: it returns the built-in actuator of a name, whose
	// Describe is called in this process (its schema is in this binary)
	// and whose config block is checked against the schema it declares;
	// Configure is not called, and no process is started for it. Commands
	// that only read what plugins say of themselves (validate, plugins)
	// set it.
	Builtin func(name string) (sdk.Actuator, bool)
}

// Info describes a running plugin, for listings.
type Info struct {
	// Name is the plugin's name in the pool's configuration.
	Name string
	// Version is the version the plugin reports.
	Version string
	// Kinds are the step kinds it declares.
	Kinds []sdk.StepKind
	// Capabilities are what it says it observes.
	Capabilities sdk.Capabilities
	// Targets names the targets it serves (`node "a"`, `gateway`, ...).
	Targets []string
	// Path is the binary that runs it (poolc itself for a built-in), or ""
	// for a reattached plugin or a built-in inspected in process.
	Path string
	// SHA256 is the hex sha256 of the binary at Path, or "" for a
	// built-in (poolc's own executable is not read through sha256).
	SHA256 string
	// Implicit says that the pool does not declare the plugin: it is the
	// built-in default, started for the targets that name no plugin.
	Implicit bool
	// NotStarted, when set, says why the plugin was not started (see
	// Options.UnpinnedInside); Version, Kinds and Capabilities are then
	// unknown.
	NotStarted string
}

// Set is the started plugins of a pool, ready for Observe and Apply. Close
// it to stop their processes.
type Set struct {
	pool    *pools.Pool
	left    []pools.Served // Options.Left
	plugins []*running     // in declaration order, the implicit default last
	byName  map[string]*running
	skipped []Info // the plugins not started (Options.UnpinnedInside)
	out     *output
	close   sync.Once
}

// roleKinds are the step kinds a plugin must declare to serve a target of
// each role (pools.Target.Role).
var roleKinds = map[string][]sdk.StepKind{
	"runtime":    sdk.RuntimeKinds,
	"gateway":    sdk.GatewayKinds,
	"cluster":    sdk.ClusterKinds,
	"image_sync": sdk.ImageSyncKinds,
}

// Start starts the pool's plugins: the declared ones and, when a target
// names no plugin (or the built-in default without declaring it), the
// built-in default. For each it starts the process, calls Describe, then
// Configure with the declaration's config block as JSON and the inventory
// of the targets it serves. It reports the plugins that cannot be found,
// refuse their configuration or do not answer, a target whose plugin is
// not declared, and a target whose plugin does not declare the step kinds
// the target needs. When any of that is an error, Start stops every plugin
// it started and returns a nil Set; otherwise the Set comes with the
// warnings. Diagnostics carry the path of the declaration or target they
// concern, so the caller can attach file:line:col.
func Start(ctx context.Context, pool *pools.Pool, opts Options) (*Set, pools.Diagnostics) {
	if opts.PluginPath == nil {
		opts.PluginPath = DefaultPluginPath(opts.WorkDir)
	}
	if opts.Self == nil {
		opts.Self = defaultSelf()
	}
	s := &Set{pool: pool, left: opts.Left, byName: map[string]*running{}, out: &output{w: opts.Stderr}}
	decls, implicit := declarations(pool, opts.Left)
	reattach, ds := reattachFromEnv(decls)
	var ok []bool
	for _, d := range decls {
		if info, ok := unpinnedInside(d, opts, reattach[d.Name]); ok {
			s.skipped = append(s.skipped, info)
			continue
		}
		p, pds := start(ctx, pool, d, opts, reattach[d.Name], s.out)
		ds = append(ds, pds...)
		ok = append(ok, p != nil)
		if p == nil {
			continue
		}
		p.info.Implicit = d.Name == implicit
		s.plugins = append(s.plugins, p)
		s.byName[d.Name] = p
	}
	for _, t := range pool.Targets() {
		p := s.byName[t.Plugin]
		if i := slices.IndexFunc(s.skipped, func(info Info) bool { return info.Name == t.Plugin }); i >= 0 {
			s.skipped[i].Targets = append(s.skipped[i].Targets, t.What)
		}
		if p == nil {
			if !slices.ContainsFunc(decls, func(d pools.Plugin) bool { return d.Name == t.Plugin }) {
				ds.Errorf("plugin-undeclared", t.Path, "%s names plugin %q, which the pool does not declare; add plugin %q { ... } or leave it unset for the built-in %q",
					t.What, t.Plugin, t.Plugin, pools.DefaultPlugin)
			}
			continue
		}
		p.info.Targets = append(p.info.Targets, t.What)
		var missing []string
		for _, k := range roleKinds[t.Role] {
			if !slices.Contains(p.info.Kinds, k) {
				missing = append(missing, string(k))
			}
		}
		if len(missing) > 0 {
			ds.Errorf("plugin-kinds", t.Path, "%s needs a plugin that handles %s steps, but plugin %q does not handle %s",
				t.What, kindNames(roleKinds[t.Role]), t.Plugin, strings.Join(missing, ", "))
		}
	}
	for _, l := range opts.Left {
		what := l.What() + ", which has left the pool"
		if p := s.byName[l.Plugin]; p != nil {
			p.info.Targets = append(p.info.Targets, what)
			continue
		}
		if !slices.ContainsFunc(decls, func(d pools.Plugin) bool { return d.Name == l.Plugin }) {
			ds.Errorf("plugin-left", nil, "the state records that plugin %q served %s and the state still holds what it set up there; keep plugin %q { ... } declared until an apply has taken that away",
				l.Plugin, what, l.Plugin)
		}
	}
	if ds.HasErrors() {
		s.Close()
		return nil, ds
	}
	return s, ds
}

// declarations are the plugins to start: the pool's declarations and, when
// some target uses the default plugin without the pool declaring it (or
// a target that left the pool used it), the built-in default, whose name
// is then returned too.
func declarations(pool *pools.Pool, left []pools.Served) ([]pools.Plugin, string) {
	decls := slices.Clone(pool.Plugins)
	if slices.ContainsFunc(decls, func(d pools.Plugin) bool { return d.Name == pools.DefaultPlugin }) {
		return decls, ""
	}
	if !slices.Contains(pool.TargetPlugins(), pools.DefaultPlugin) &&
		!slices.ContainsFunc(left, func(l pools.Served) bool { return l.Plugin == pools.DefaultPlugin }) {
		return decls, ""
	}
	return append(decls, pools.Plugin{Name: pools.DefaultPlugin, Builtin: true}), pools.DefaultPlugin
}

func kindNames(kinds []sdk.StepKind) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// Plugin returns the running plugin of that name as an actuator that
// restarts its process when it has died, or false.
func (s *Set) Plugin(name string) (sdk.Actuator, bool) {
	p, ok := s.byName[name]
	if !ok {
		return nil, false
	}
	return restartable{p}, true
}

// Plugins describes the running plugins, in declaration order, the
// implicit default last, then those not started (Info.NotStarted).
func (s *Set) Plugins() []Info {
	out := make([]Info, len(s.plugins))
	for i, p := range s.plugins {
		out[i] = p.info
		out[i].Kinds = slices.Clone(p.info.Kinds)
		out[i].Targets = slices.Clone(p.info.Targets)
	}
	return append(out, slices.Clone(s.skipped)...)
}

// unpinnedInside reports whether plugin d is not to be started because
// its binary is unpinned and lies inside opts.UnpinnedInside, and if so
// describes it, with the sha256 to pin it with.
//
// A sha256 in the pool does not make such a binary run: whoever wrote the
// binary into the repository wrote the pin beside it.
func unpinnedInside(d pools.Plugin, opts Options, rc *sdk.ReattachConfig) (Info, bool) {
	if opts.UnpinnedInside == "" || d.Builtin || rc != nil {
		return Info{}, false
	}
	cmd, err := command(d, opts)
	if err != nil || !within(cmd.Path, opts.UnpinnedInside) {
		return Info{}, false // not found is reported by start
	}
	sum, err := fileSHA256(cmd.Path)
	if err != nil {
		sum = ""
	}
	why := "is not pinned by sha256"
	if d.SHA256 != "" {
		why = "is pinned only by the pool that lies beside it"
	}
	return Info{Name: d.Name, Path: cmd.Path, SHA256: sum,
		NotStarted: fmt.Sprintf("its binary %s lies inside %s and %s", cmd.Path, opts.UnpinnedInside, why)}, true
}

// NotStarted are the diagnostics, of the given severity, of the plugins
// Start did not start (Options.UnpinnedInside), each at the plugin's
// declaration; consequence says what the command could not do without it.
func (s *Set) NotStarted(sev pools.Severity, consequence string) pools.Diagnostics {
	var ds pools.Diagnostics
	for _, info := range s.skipped {
		ds = append(ds, pools.Diagnostic{Severity: sev, Code: "plugin-not-started", Path: pools.Path{"plugin", info.Name},
			Message: fmt.Sprintf("plugin %s not started: %s, so %s; once you trust it, pin it with sha256 = %q and pass --allow-unpinned to run it", info.Name, info.NotStarted, consequence, info.SHA256)})
	}
	return ds
}

// within reports whether path lies inside dir: as written (so a symbolic
// link inside dir that leads out of it is inside), or once symbolic links
// are resolved.
func within(path, dir string) bool {
	inside := func(p, d string) bool {
		rel, err := filepath.Rel(d, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return filepath.Clean(p)
	}
	resolve := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return abs(r)
		}
		return abs(p)
	}
	return inside(abs(path), abs(dir)) || inside(resolve(path), resolve(dir))
}

// Close stops every plugin process (a reattached plugin is left running)
// and flushes what they wrote. It may be called more than once.
func (s *Set) Close() {
	s.close.Do(func() {
		var wg sync.WaitGroup
		for _, p := range s.plugins {
			wg.Go(p.kill)
		}
		wg.Wait()
		s.out.flush()
	})
}
