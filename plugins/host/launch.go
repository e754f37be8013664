package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"poolc.dev/poolc/internal/redact"
	"poolc.dev/poolc/plugins/convert"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// Limits on a plugin's start: how long it may take to print its
// handshake, and to answer the health check, Describe and Configure.
const (
	startTimeout = 30 * time.Second
	setupTimeout = 30 * time.Second
)

// otherProtocol matches go-plugin's refusal of a plugin that speaks
// another protocol version, capturing the plugin's version.
var otherProtocol = regexp.MustCompile(`(?i)incompatible API version with plugin\. Plugin version: (\d+)`)

// exitWait is how long a failed call waits for the plugin's process to be
// seen as ended, so the error can say how it ended.
const exitWait = 2 * time.Second

// running is one started plugin. decl, opts and out are kept to start it
// again after its process dies (see restart.go); mu guards the fields a
// restart replaces.
type running struct {
	mu     sync.Mutex
	info   Info
	client *plugin.Client
	cmd    *exec.Cmd // nil when reattached
	act    sdk.Actuator
	// redact masks the plugin's credentials in its text; set by start,
	// then by setup once Describe gave the config schema.
	redact *redact.Redactor

	pool *pools.Pool
	decl pools.Plugin
	opts Options
	out  *output
}

// start starts one plugin and sets it up. On failure it returns nil, with
// the process (if any) stopped.
func start(ctx context.Context, pool *pools.Pool, d pools.Plugin, opts Options, rc *sdk.ReattachConfig, out *output) (*running, pools.Diagnostics) {
	at := pools.Path{"plugin", d.Name}
	var ds pools.Diagnostics
	p := &running{info: Info{Name: d.Name}, pool: pool, decl: d, opts: opts, out: out, redact: redactor(d, "")}
	out.redactLines(d.Name, p.redact)
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		Plugins:          plugin.PluginSet{sdk.PluginName: &sdk.GRPCPlugin{CallFailed: p.callFailed}},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.NewNullLogger(),
		Stderr:           out.writer(d.Name, true),
		SyncStderr:       out.writer(d.Name, false),
		SyncStdout:       out.writer(d.Name, false),
		StartTimeout:     startTimeout,
		GRPCDialOptions:  sdk.DialOptions(),
	}
	if deadline, ok := ctx.Deadline(); ok {
		cfg.StartTimeout = min(startTimeout, time.Until(deadline))
	}
	if rc != nil {
		if err := reattachRules(d, rc); err != nil {
			ds.Errorf("plugin-reattach", at, "%v", err)
			return nil, ds
		}
		addr, err := netAddr(rc)
		if err != nil {
			ds.Errorf("plugin-reattach", at, "%s for plugin %q: %v", sdk.ReattachEnv, d.Name, err)
			return nil, ds
		}
		cfg.Reattach = reattachConfig(rc, addr)
		if d.SHA256 != "" {
			ds = append(ds, pools.Diagnostic{Severity: pools.Warning, Code: "plugin-reattach", Path: append(at, "sha256"),
				Message: fmt.Sprintf("plugin %q is reattached through %s; its sha256 is not checked", d.Name, sdk.ReattachEnv)})
		}
	} else if d.Builtin && opts.Builtin != nil {
		return inspect(d, opts, p)
	} else {
		cmd, err := command(d, opts)
		if err != nil {
			ds.Errorf("plugin-not-found", at, "%v", err)
			return nil, ds
		}
		sum := ""
		if !d.Builtin { // a built-in runs poolc's own executable, not read again
			if sum, err = fileSHA256(cmd.Path); err != nil {
				ds.Errorf("plugin-not-found", at, "plugin %q: %v", d.Name, err)
				return nil, ds
			}
		}
		if d.SHA256 != "" {
			want, err := hex.DecodeString(d.SHA256)
			if err != nil || len(want) != sha256.Size {
				ds.Errorf("plugin-sha256", append(at, "sha256"), "plugin %q: sha256 %q is not 64 hexadecimal digits", d.Name, d.SHA256)
				return nil, ds
			}
			if sum != hex.EncodeToString(want) {
				ds.Errorf("plugin-sha256", append(at, "sha256"), "%s", mismatch(d.Name, cmd.Path, d.SHA256, sum))
				return nil, ds
			}
			// go-plugin checks again just before it runs the file.
			cfg.SecureConfig = &plugin.SecureConfig{Checksum: want, Hash: sha256.New()}
		}
		setPdeathsig(cmd)
		cfg.Cmd = cmd
		cfg.AutoMTLS = true
		p.cmd = cmd
		p.info.Path = cmd.Path
		p.info.SHA256 = sum
	}

	p.client = plugin.NewClient(cfg)
	pds := redactDiagnostics(p.redact, p.setup(ctx, d))
	ds = append(ds, pds...)
	if pds.HasErrors() {
		p.client.Kill()
		return nil, ds
	}
	return p, ds
}

// setup connects to the started plugin, checks its health, and calls
// Describe and Configure.
func (p *running) setup(ctx context.Context, d pools.Plugin) pools.Diagnostics {
	at := pools.Path{"plugin", d.Name}
	var ds pools.Diagnostics
	conn, err := p.client.Client()
	if err != nil {
		if errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
			sum, _ := fileSHA256(p.cmd.Path)
			ds.Errorf("plugin-sha256", append(at, "sha256"), "%s", mismatch(d.Name, p.cmd.Path, d.SHA256, sum))
			return ds
		}
		reason := err.Error()
		if m := otherProtocol.FindStringSubmatch(reason); m != nil {
			ds.Errorf("plugin-protocol", at, "plugin %s speaks actuator protocol %s, but this poolc speaks protocol %d; rebuild the plugin with a poolc SDK of protocol %d (see docs/PLUGINS.md)",
				d.Name, m[1], sdk.ProtocolVersion, sdk.ProtocolVersion)
			return ds
		}
		if state, ok := p.exitState(exitWait); ok {
			reason = state
		}
		ds.Errorf("plugin-start", at, "plugin %s did not start: %s", d.Name, reason)
		return ds
	}
	gc, ok := conn.(*plugin.GRPCClient)
	if !ok {
		ds.Errorf("plugin-start", at, "plugin %s speaks %s, not gRPC", d.Name, p.client.Protocol())
		return ds
	}
	raw, err := conn.Dispense(sdk.PluginName)
	if err != nil {
		ds.Errorf("plugin-start", at, "plugin %s: %v", d.Name, err)
		return ds
	}
	p.act = raw.(sdk.Actuator)

	hctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	if _, err := grpc_health_v1.NewHealthClient(gc.Conn).Check(hctx, &grpc_health_v1.HealthCheckRequest{Service: plugin.GRPCServiceName}); err != nil {
		return atPlugin(d.Name, p.callFailed("the health check", err))
	}
	config, ds := p.describe(hctx, d)
	if ds.HasErrors() {
		return ds
	}
	conf := p.act.Configure(hctx, sdk.ConfigureRequest{Pool: p.pool.Name, ConfigJSON: config, WorkDir: p.opts.WorkDir,
		Inventory: convert.Inventory(p.pool, d.Name, p.opts.Leaving, p.opts.Left...)})
	return append(ds, atPlugin(d.Name, conf.Diagnostics)...)
}

// inspect sets up built-in plugin d without a process (Options.Builtin):
// its Describe is called in this process and its config block checked
// against its schema.
func inspect(d pools.Plugin, opts Options, p *running) (*running, pools.Diagnostics) {
	var ds pools.Diagnostics
	act, ok := opts.Builtin(d.Name)
	if !ok {
		ds.Errorf("plugin-not-found", pools.Path{"plugin", d.Name}, "plugin %q is not built into poolc", d.Name)
		return nil, ds
	}
	p.act = act
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	_, ds = p.describe(ctx, d)
	ds = redactDiagnostics(p.redact, ds)
	if ds.HasErrors() {
		return nil, ds
	}
	return p, ds
}

// describe calls Describe, records what the plugin says of itself, and
// checks the declaration's config block against the schema it declares,
// returning the block as JSON, defaults filled in, for Configure.
func (p *running) describe(hctx context.Context, d pools.Plugin) ([]byte, pools.Diagnostics) {
	at := pools.Path{"plugin", d.Name}
	var ds pools.Diagnostics
	var err error
	desc := p.act.Describe(hctx, sdk.DescribeRequest{})
	ds = append(ds, atPlugin(d.Name, desc.Diagnostics)...)
	if desc.Diagnostics.HasErrors() {
		return nil, ds
	}
	p.info.Version = desc.Version
	p.info.Kinds = desc.StepKinds
	p.info.Capabilities = desc.Capabilities
	p.redact = redactor(d, desc.ConfigSchema)
	p.out.redactLines(d.Name, p.redact)

	config := []byte("{}")
	if d.Config != nil {
		if config, err = json.Marshal(d.Config); err != nil {
			ds.Errorf("plugin-config", append(at, "config"), "plugin %q: config cannot be written as JSON: %v", d.Name, err)
			return nil, ds
		}
	}
	if desc.ConfigSchema != "" {
		checked, cds := sdk.CheckConfig(desc.ConfigSchema, config)
		ds = append(ds, atPlugin(d.Name, cds)...)
		if cds.HasErrors() {
			return nil, ds
		}
		config = checked
	}
	return config, ds
}

// atPlugin converts a plugin's diagnostics as Diagnostics does, and gives
// those without a path the path of the plugin's declaration.
func atPlugin(name string, ds sdk.Diagnostics) pools.Diagnostics {
	out := Diagnostics(name, ds)
	for i := range out {
		if out[i].Path == nil {
			out[i].Path = pools.Path{"plugin", name}
		}
	}
	return out
}

// mismatch is the message that refuses a binary whose sum is not the
// pinned one.
func mismatch(name, path, want, got string) string {
	return fmt.Sprintf("plugin %q: %s has sha256 %s, but the configuration pins sha256 %s; refusing to run it (rebuilt or replaced? update the sha256 if the new binary is trusted)", name, path, got, want)
}

// callFailed is the plugin's sdk.GRPCPlugin.CallFailed: a call that failed
// because the plugin's process ended says how it ended.
func (p *running) callFailed(method string, err error) sdk.Diagnostics {
	d := sdk.CallFailure(p.info.Name, method, err)
	code := status.Code(err)
	if errors.Is(err, context.Canceled) || code == codes.Canceled {
		return sdk.Diagnostics{d} // poolc gave up, not the plugin
	}
	wait := time.Duration(0)
	if code == codes.Unavailable {
		wait = exitWait // the connection broke: the process may be ending
	}
	if state, ok := p.exitState(wait); ok {
		d.Summary = fmt.Sprintf("plugin %s did not respond: %s", p.info.Name, state)
		d.Detail = fmt.Sprintf("The plugin's process ended during %s; its output above may say why.", method)
	}
	return sdk.Diagnostics{d}
}

// exitState waits up to wait for the plugin's process to be seen as ended
// and says how it ended: "exit status 2", "signal: killed".
func (p *running) exitState(wait time.Duration) (string, bool) {
	deadline := time.Now().Add(wait)
	for !p.client.Exited() {
		if !time.Now().Before(deadline) {
			return "", false
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Exited is true only after the process was waited for, so
	// ProcessState is set and no longer written.
	if p.cmd != nil && p.cmd.ProcessState != nil {
		return p.cmd.ProcessState.String(), true
	}
	return "its process exited", true
}

// command returns the command that runs the declared plugin.
func command(d pools.Plugin, opts Options) (*exec.Cmd, error) {
	if d.Builtin {
		switch {
		case d.Path != "":
			return nil, fmt.Errorf("plugin %q is built into poolc and cannot have a path", d.Name)
		case d.SHA256 != "":
			return nil, fmt.Errorf("plugin %q is built into poolc; sha256 pins only external plugin binaries", d.Name)
		case len(opts.Self) == 0:
			return nil, fmt.Errorf("plugin %q is built into poolc, but poolc cannot find its own executable", d.Name)
		}
		args := append(append([]string{}, opts.Self[1:]...), "plugin-serve", d.Name)
		return exec.Command(opts.Self[0], args...), nil
	}
	path := d.Path
	switch {
	case path == "":
		found, err := find(d.Name, BinaryName(d.Name), opts.PluginPath)
		if err != nil {
			return nil, err
		}
		path = found
	case !filepath.IsAbs(path):
		local := filepath.Join(opts.WorkDir, path)
		if _, err := os.Stat(local); err != nil && filepath.Base(path) == path {
			// A bare file name not beside the pool is looked for on
			// the plugin path.
			found, ferr := find(d.Name, path, append([]string{opts.WorkDir}, opts.PluginPath...))
			if ferr != nil {
				return nil, ferr
			}
			local = found
		}
		path = local
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return exec.Command(abs), nil
}

// BinaryName is the file name of external plugin NAME on the plugin path.
func BinaryName(name string) string {
	if runtime.GOOS == "windows" {
		return pools.PluginBinaryPrefix + name + ".exe"
	}
	return pools.PluginBinaryPrefix + name
}

// DefaultPluginPath is the plugin path when Options gives none:
// .poolc/plugins in workDir, then each directory of $POOLC_PLUGIN_PATH
// (separated by ':', or ';' on Windows).
func DefaultPluginPath(workDir string) []string {
	path := []string{filepath.Join(workDir, filepath.FromSlash(pools.PluginDir))}
	for _, dir := range filepath.SplitList(os.Getenv("POOLC_PLUGIN_PATH")) {
		if dir != "" {
			path = append(path, dir)
		}
	}
	return path
}

// find looks for plugin name's binary, file, in dirs, in order.
func find(name, file string, dirs []string) (string, error) {
	for _, dir := range dirs {
		path := filepath.Join(dir, file)
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
			return path, nil
		}
	}
	return "", fmt.Errorf("plugin %q not found: no file %s in %s; build it there, add its directory to POOLC_PLUGIN_PATH, or give its path", name, file, strings.Join(dirs, ", "))
}

// defaultSelf is the command that runs this program again: os.Args[0] as
// invoked (looked up on $PATH when it has no '/'), else os.Executable().
func defaultSelf() []string {
	arg0 := os.Args[0]
	if strings.ContainsRune(arg0, '/') {
		return []string{arg0}
	}
	if path, err := exec.LookPath(arg0); err == nil {
		return []string{path}
	}
	if path, err := os.Executable(); err == nil {
		return []string{path}
	}
	return nil
}

// fileSHA256 returns the hex sha256 of the file at path.
func fileSHA256(path string) (string, error) {
	// A FIFO or a device is never opened: reading one may block or never end.
	if st, err := os.Stat(path); err != nil {
		return "", err
	} else if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (%v)", path, st.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// reattachFromEnv reads POOLC_REATTACH_PLUGINS. It warns about entries
// for plugins the pool does not declare.
func reattachFromEnv(decls []pools.Plugin) (map[string]*sdk.ReattachConfig, pools.Diagnostics) {
	var ds pools.Diagnostics
	env := os.Getenv(sdk.ReattachEnv)
	if env == "" {
		return nil, nil
	}
	var all map[string]*sdk.ReattachConfig
	if err := json.Unmarshal([]byte(env), &all); err != nil {
		ds.Errorf("plugin-reattach", nil, "%s is not a JSON object of plugin name to address: %v", sdk.ReattachEnv, err)
		return nil, ds
	}
	declared := map[string]bool{}
	for _, d := range decls {
		declared[d.Name] = true
	}
	var unknown []string
	for name := range all {
		if !declared[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	for _, name := range unknown {
		ds = append(ds, pools.Diagnostic{Severity: pools.Warning, Code: "plugin-reattach",
			Message: fmt.Sprintf("%s names plugin %q, which the pool does not declare", sdk.ReattachEnv, name)})
	}
	return all, ds
}

// netAddr is the address of a reattach config as a net.Addr.
func netAddr(rc *sdk.ReattachConfig) (net.Addr, error) {
	switch rc.Addr.Network {
	case "unix":
		return net.ResolveUnixAddr("unix", rc.Addr.String)
	}
	return nil, fmt.Errorf("address network %q is not unix", rc.Addr.Network)
}
