package host

import (
	"fmt"
	"net"
	"os"

	"github.com/hashicorp/go-plugin"

	"poolc.dev/poolc/internal/redact"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// ReattachPinnedEnv, set to 1, lets POOLC_REATTACH_PLUGINS replace a plugin
// the pool pins by sha256. A reattached process has no binary to check, so
// without it the pin would be bypassed by whoever sets the environment.
const ReattachPinnedEnv = "POOLC_REATTACH_PINNED"

// reattachRules checks a POOLC_REATTACH_PLUGINS entry for plugin d before
// poolc connects to it: the address must be a unix socket (go-plugin's
// reattach speaks plaintext, and a TCP port is open to every local user
// and beyond), and a pinned plugin is replaced only when ReattachPinnedEnv
// says so.
func reattachRules(d pools.Plugin, rc *sdk.ReattachConfig) error {
	if rc.Addr.Network != "unix" {
		return fmt.Errorf("%s for plugin %q: address network %q refused: a reattached plugin is reached without TLS, so only a unix socket is accepted", sdk.ReattachEnv, d.Name, rc.Addr.Network)
	}
	if d.SHA256 != "" && os.Getenv(ReattachPinnedEnv) != "1" {
		return fmt.Errorf("plugin %q is pinned by sha256, and a reattached process has no binary to check: set %s=1 to replace it with the process %s names", d.Name, ReattachPinnedEnv, sdk.ReattachEnv)
	}
	return nil
}

// reattachConfig is go-plugin's reattach configuration for an entry that
// passed reattachRules, at addr. It is always in go-plugin's test mode,
// where the client never signals the process: poolc did not start it, and
// its pid comes from the environment, so it may be any process at all.
func reattachConfig(rc *sdk.ReattachConfig, addr net.Addr) *plugin.ReattachConfig {
	protocol := plugin.Protocol(rc.Protocol)
	if protocol == "" {
		protocol = plugin.ProtocolGRPC
	}
	return &plugin.ReattachConfig{Protocol: protocol, ProtocolVersion: rc.ProtocolVersion, Addr: addr, Pid: rc.Pid, Test: true}
}

// redactLines makes the output of plugin name mask what r masks (the
// credentials of its config, and any URL userinfo, Authorization value or
// bearer token) in every line it writes.
func (o *output) redactLines(name string, r *redact.Redactor) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.redactors == nil {
		o.redactors = map[string]*redact.Redactor{}
	}
	o.redactors[name] = r
}

// redactor is the redactor of plugin d, whose config schema (from
// Describe, "" before) marks the fields in it that are sensitive.
func redactor(d pools.Plugin, schema string) *redact.Redactor {
	return redact.ForConfig(d.Config, append(sdk.SensitivePaths(schema), d.Sensitive...)...)
}

// redactDiagnostics masks credentials in diagnostics that hold a plugin's
// text (from Describe, the config check, Configure, Observe), which poolc
// prints.
func redactDiagnostics(r *redact.Redactor, ds pools.Diagnostics) pools.Diagnostics {
	out := make(pools.Diagnostics, len(ds))
	for i, d := range ds {
		d.Message = r.String(d.Message)
		out[i] = d
	}
	return out
}

// redactResponse masks credentials in what a step's Apply sent back: its
// diagnostics, which poolc prints and journals, and its progress messages.
func redactResponse(r *redact.Redactor, ds sdk.Diagnostics) sdk.Diagnostics {
	out := make(sdk.Diagnostics, len(ds))
	for i, d := range ds {
		d.Summary, d.Detail = r.String(d.Summary), r.String(d.Detail)
		out[i] = d
	}
	return out
}

// redactProgress wraps progress so that each message is masked first.
func redactProgress(r *redact.Redactor, progress sdk.ProgressFunc) sdk.ProgressFunc {
	if progress == nil {
		return nil
	}
	return func(p sdk.Progress) {
		p.Message = r.String(p.Message)
		progress(p)
	}
}
