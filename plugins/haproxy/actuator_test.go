package haproxy

import (
	"context"
	"testing"

	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/plugins/sdk/sdktest"
)

func TestActuatorConformance(t *testing.T) {
	sdktest.Conformance(t, NewActuator("test"))
}

func TestActuatorConfigure(t *testing.T) {
	for cfg, wantErr := range map[string]bool{
		`{"admin_socket":"/s","map_file":"/m","state_file":"/st"}`:                            false,
		`{"admin_socket":"ipv4@127.0.0.1:9999","map_file":"/m","state_file":"/st"}`:           false,
		`{"admin_socket":"/s","map_file":"/m","state_file":"/st","ssh_host":"gw"}`:            true, // the socket must be TCP
		`{"admin_socket":"/s","map_file":"/m"}`:                                               true,
		`{"admin_socket":"/s","map_file":"relative.map","state_file":"/st"}`:                  true,
		`{"admin_socket":"/s","map_file":"/m","state_file":"/st","drain_timeout_seconds":-1}`: true,
	} {
		r := NewActuator("test").Configure(context.Background(), sdk.ConfigureRequest{ConfigJSON: []byte(cfg)})
		if r.Diagnostics.HasErrors() != wantErr {
			t.Errorf("%s: %v", cfg, r.Diagnostics)
		}
	}
}
