package configschema_test

import (
	"encoding/json"
	"strings"
	"testing"

	"poolc.dev/poolc/plugins/haproxy"
	"poolc.dev/poolc/plugins/imagesync"
	"poolc.dev/poolc/plugins/kube"
	"poolc.dev/poolc/plugins/llama"
	"poolc.dev/poolc/plugins/sdk"
)

// Every string of a built-in plugin's config block has a rule: the
// values the hardening battery sent to nodes (an env key with a command
// substitution, listen_host = "x;touch", state_dir = "--help", an
// admin_socket with a line break, a map_file with "..") are refused by
// the schema, naming the attribute; good values pass.
func TestEveryConfigStringHasARule(t *testing.T) {
	haBase := map[string]any{"admin_socket": "/run/haproxy/poolc.sock", "map_file": "/etc/haproxy/poolc.map", "state_file": "/var/lib/poolc/state"}
	with := func(base map[string]any, k string, v any) map[string]any {
		out := map[string]any{}
		for bk, bv := range base {
			out[bk] = bv
		}
		out[k] = v
		return out
	}
	for _, c := range []struct {
		plugin, schema string
		config         map[string]any
		bad            string // the attribute named, "" when good
	}{
		{"llama", llama.ConfigSchema, map[string]any{"env": map[string]any{"A$(touch /tmp/x)": "1"}}, "env"},
		{"llama", llama.ConfigSchema, map[string]any{"env": map[string]any{"HF_TOKEN": "a\nb"}}, "env"},
		{"llama", llama.ConfigSchema, map[string]any{"listen_host": "x;touch"}, "listen_host"},
		{"llama", llama.ConfigSchema, map[string]any{"state_dir": "--help"}, "state_dir"},
		{"llama", llama.ConfigSchema, map[string]any{"state_dir": "/srv/../etc"}, "state_dir"},
		{"llama", llama.ConfigSchema, map[string]any{"llama_server": "llama-server --rpc x"}, "llama_server"},
		{"llama", llama.ConfigSchema, map[string]any{"llama_server": "-x"}, "llama_server"},
		{"llama", llama.ConfigSchema, map[string]any{"known_hosts": "/a\u2028b"}, "known_hosts"},
		{"llama", llama.ConfigSchema, map[string]any{"env": map[string]any{"HF_TOKEN": "s3cret", "_A1": ""}, "listen_host": "127.0.0.1",
			"state_dir": ".poolc/lanes", "llama_server": "/opt/llama.cpp/bin/llama-server", "known_hosts": "~/.ssh/known_hosts"}, ""},
		{"llama", llama.ConfigSchema, map[string]any{"listen_host": "::", "llama_server": "llama-server"}, ""},
		{"llama", llama.ConfigSchema, map[string]any{"listen_host": "[::1]"}, ""},
		{"haproxy", haproxy.ConfigSchema, with(haBase, "admin_socket", "/run/x.sock\nset map x"), "admin_socket"},
		{"haproxy", haproxy.ConfigSchema, with(haBase, "map_file", "/etc/haproxy/../passwd"), "map_file"},
		{"haproxy", haproxy.ConfigSchema, with(haBase, "state_file", "relative"), "state_file"},
		{"haproxy", haproxy.ConfigSchema, with(haBase, "ssh_host", "h -oProxyCommand=x"), "ssh_host"},
		{"haproxy", haproxy.ConfigSchema, haBase, ""},
		{"haproxy", haproxy.ConfigSchema, with(haBase, "admin_socket", "ipv4@127.0.0.1:9999"), ""},
		{"image-sync", imagesync.ConfigSchema, map[string]any{"registry_host": "reg istry"}, "registry_host"},
		{"image-sync", imagesync.ConfigSchema, map[string]any{"ssh_key": "/k\x00"}, "ssh_key"},
		{"kube", kube.ConfigSchema, map[string]any{"kubeconfig": "/k\n"}, "kubeconfig"},
		{"kube", kube.ConfigSchema, map[string]any{"kubeconfig": "KUBECONFIG"}, ""},
	} {
		cfg, _ := json.Marshal(c.config)
		_, ds := sdk.CheckConfig(c.schema, cfg)
		switch {
		case c.bad == "" && len(ds) > 0:
			t.Errorf("%s %s refused: %v", c.plugin, cfg, ds)
		case c.bad != "" && (len(ds) == 0 || len(ds[0].Path) == 0 || ds[0].Path[0] != c.bad):
			t.Errorf("%s %s: got %v, want a finding at %s", c.plugin, cfg, ds, c.bad)
		case c.bad != "" && strings.Contains(ds[0].Summary+ds[0].Detail, "s3cret"):
			t.Errorf("%s: the finding shows a secret: %v", c.plugin, ds)
		}
	}
}
