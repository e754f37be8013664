package cli

import (
	"fmt"

	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/cli/views"
	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/internal/atomicfile"
	"poolc.dev/poolc/plugins/haproxy"
	"poolc.dev/poolc/pools"
)

const gatewayConfigHelp = `Prints the HAProxy configuration for the pool's gateway: a frontend that
routes each request on its JSON body's "model" through a map file, one
backend per lane (two server slots, so a lane can move under load), and a
cloud backend for aliases the map does not know. The admin socket, map file
and server state file are those of the pool's gateway plugin block
(plugin "haproxy" { config = { admin_socket = ..., map_file = ...,
state_file = ... } }). Lanes start in maintenance; the first apply gives
each its address through the admin socket. --map-out writes the initial
map (each alias to its lane's backend) to FILE and the fallback map (each
alias to its fallbacks, tried in order while its lane fails its health
check, GET /health) to FILE.fallbacks. With the plugin's config_file and
master_socket set, poolc keeps that file itself from then on (every
server's address in it, so a restart or reload keeps every route) and
reloads HAProxy when a new lane needs a backend: run this command once.

Examples:
  poolc gateway config pools/ > /etc/haproxy/haproxy.cfg
  poolc gateway config --bind 0.0.0.0:8000 --map-out /etc/haproxy/poolc-aliases.map pools/

Exit codes: 0 success, 1 an invalid configuration or an error.`

func runGatewayConfig(a *arguments.GatewayConfig, io Stdio) int {
	if a.Format != "haproxy" {
		return fail(io, "gateway config", fmt.Sprintf("--format %q: only haproxy is known", a.Format))
	}
	cfg, diags := compiler.Load(a.Paths.Paths)
	if diags.HasErrors() {
		writeDiagnostics(io, diags)
		return ExitError
	}
	err := func() error {
		spec, err := gatewaySpec(cfg.Pool, a.Bind, a.Cloud)
		if err != nil {
			return err
		}
		text, mapText, err := haproxy.Config(spec)
		if err != nil {
			return err
		}
		if a.MapOut != "" {
			if err := atomicfile.Write(a.MapOut, []byte(mapText), 0o644); err != nil {
				return err
			}
			if err := atomicfile.Write(haproxy.FallbackMapFile(a.MapOut), []byte(haproxy.FallbackMap(spec)), 0o644); err != nil {
				return err
			}
		}
		return views.GatewayConfig(io.Out, text)
	}()
	if err != nil {
		return fail(io, "gateway config", err.Error())
	}
	return ExitOK
}

// gatewaySpec is the HAProxy spec of the pool: its lanes and aliases, and
// the files its gateway plugin's config block names.
func gatewaySpec(p *pools.Pool, bind, cloud string) (haproxy.Spec, error) {
	d := declaration(p, p.Gateway)
	if d != nil {
		// The plugin's own bind and cloud, which it writes its
		// config_file with, unless a flag says otherwise.
		if v, ok := d.Config["bind"].(string); ok && bind == "" {
			bind = v
		}
		if v, ok := d.Config["cloud"].(string); ok && cloud == "" {
			cloud = v
		}
	}
	if bind == "" {
		bind = haproxy.DefaultBind
	}
	spec := haproxy.Spec{Bind: bind, CloudAddr: cloud}
	if d == nil {
		return spec, fmt.Errorf("the pool's gateway plugin %q is not declared: add plugin %q { builtin = true, config = { admin_socket = ..., map_file = ..., state_file = ... } }", p.Gateway, p.Gateway)
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"admin_socket", &spec.AdminSocket}, {"map_file", &spec.MapFile}, {"state_file", &spec.StateFile}} {
		v, _ := d.Config[f.key].(string)
		if v == "" {
			return spec, fmt.Errorf("plugin %q: config.%s is not set", d.Name, f.key)
		}
		*f.dst = v
	}
	for _, l := range p.Lanes {
		spec.Lanes = append(spec.Lanes, haproxy.LaneBackend{Lane: l.Name})
	}
	for _, a := range p.Aliases {
		spec.Aliases = append(spec.Aliases, haproxy.AliasRoute{Alias: a.Name, Lane: a.Lane, Fallbacks: a.Fallbacks})
	}
	return spec, nil
}
