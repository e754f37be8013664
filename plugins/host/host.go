// Package host is poolc's side of its actuator plugins: it starts each
// declared plugin in its own process, checks what it is and configures it,
// routes each step kind to the one plugin that declares it, and turns
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
//	POOLC_REATTACH_PLUGINS='{"webhook":{"Protocol":"grpc","ProtocolVersion":1,"Pid":4242,"Test":true,"Addr":{"Network":"unix","String":"/tmp/plugin1234"}}}'
//
// A reattached plugin's sha256 is not checked (there is no binary to
// check), and poolc warns that it was not.
package host

import (
	"context"
	"io"
	"slices"
	"sync"

	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// Options say where plugins are found and where their output goes.
type Options struct {
	// Pool is the pool's name, passed to each plugin's Configure.
	Pool string
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
}

// Info describes a running plugin, for listings.
type Info struct {
	// Name is the plugin's name in the pool's configuration.
	Name string
	// Version is the version the plugin reports.
	Version string
	// Kinds are the step kinds it declares.
	Kinds []pools.StepKind
	// Path is the binary that runs it (poolc itself for a built-in), or ""
	// for a reattached plugin.
	Path string
	// SHA256 is the hex sha256 of the binary at Path, or "".
	SHA256 string
}

// Set is the started plugins of a pool, ready for Observe and Apply. Close
// it to stop their processes.
type Set struct {
	plugins []*running // in declaration order
	byKind  map[pools.StepKind]*running
	out     *output
	close   sync.Once
}

// Start starts the declared plugins: for each it starts the process,
// calls Describe, then Configure with the declaration's config block as
// JSON. It reports the plugins that cannot be found, refuse their
// configuration or do not answer, and two plugins that declare the same
// step kind. When any of that is an error, Start stops every plugin it
// started and returns a nil Set; otherwise the Set comes with the
// warnings. Diagnostics name the plugin's declaration in their Path
// (plugin NAME ...), so the caller can attach file:line:col.
func Start(ctx context.Context, decls []pools.Plugin, opts Options) (*Set, pools.Diagnostics) {
	if opts.PluginPath == nil {
		opts.PluginPath = DefaultPluginPath(opts.WorkDir)
	}
	if opts.Self == nil {
		opts.Self = defaultSelf()
	}
	s := &Set{byKind: map[pools.StepKind]*running{}, out: &output{w: opts.Stderr}}
	reattach, ds := reattachFromEnv(decls)
	for _, d := range decls {
		p, pds := start(ctx, d, opts, reattach[d.Name], s.out)
		ds = append(ds, pds...)
		if p == nil {
			continue
		}
		s.plugins = append(s.plugins, p)
		for _, k := range p.info.Kinds {
			if other, taken := s.byKind[k]; taken {
				ds.Errorf("plugin-conflict", pools.Path{"plugin", d.Name},
					"plugins %q and %q both declare step kind %q; each kind must have one plugin, so remove one of them", other.info.Name, d.Name, k)
				continue
			}
			s.byKind[k] = p
		}
	}
	if ds.HasErrors() {
		s.Close()
		return nil, ds
	}
	return s, ds
}

// For returns the plugin that carries out steps of kind, and its name.
// Diagnostics its calls return are the plugin's own; convert them with
// Diagnostics.
func (s *Set) For(kind pools.StepKind) (sdk.Actuator, string, bool) {
	p, ok := s.byKind[kind]
	if !ok {
		return nil, "", false
	}
	return restartable{p}, p.info.Name, true
}

// Plugins describes the running plugins, in declaration order.
func (s *Set) Plugins() []Info {
	out := make([]Info, len(s.plugins))
	for i, p := range s.plugins {
		out[i] = p.info
		out[i].Kinds = slices.Clone(p.info.Kinds)
	}
	return out
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
