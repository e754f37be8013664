package haproxy

import (
	"context"
	"testing"

	"poolc.dev/poolc/plugins/llama"
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

// TestAnOnDemandLaneIsReachedAtTheRouterPort: the pool's on-demand lanes
// are served by their node's router, so a route to one goes to the
// router's port (llama's default unless configured), the others to their
// own.
func TestAnOnDemandLaneIsReachedAtTheRouterPort(t *testing.T) {
	inv := sdk.Inventory{Gateway: true, Lanes: []sdk.LaneSpec{
		{Name: "vision", Port: 8083, Residency: sdk.OnDemand},
		{Name: "chat", Port: 8081, Residency: sdk.KeepWarm},
	}}
	for cfg, want := range map[string]int{
		`{"admin_socket":"/s","map_file":"/m","state_file":"/st"}`:                    llama.DefaultRouterPort,
		`{"admin_socket":"/s","map_file":"/m","state_file":"/st","router_port":9100}`: 9100,
	} {
		a := NewActuator("test")
		if r := a.Configure(context.Background(), sdk.ConfigureRequest{ConfigJSON: []byte(cfg), Inventory: inv}); r.Diagnostics.HasErrors() {
			t.Fatal(r.Diagnostics)
		}
		if got := a.servedPort(inv, "vision", 8083); got != want {
			t.Errorf("%s: on-demand lane at port %d, want %d", cfg, got, want)
		}
		if got := a.servedPort(inv, "chat", 0); got != 8081 {
			t.Errorf("%s: keep-warm lane at port %d, want its own 8081", cfg, got)
		}
		if got := a.servedPort(inv, "chat", 8091); got != 8091 {
			t.Errorf("%s: keep-warm lane at a spare port: %d, want 8091", cfg, got)
		}
		if got := a.servedPort(inv, "chat", want); got != 8081 {
			t.Errorf("%s: keep-warm lane left at the router's port: %d, want its own 8081", cfg, got)
		}
		if got := a.lanePort(inv, "vision", want); got != 8083 {
			t.Errorf("%s: the on-demand lane's route at the router's port is reported at %d, want its own 8083", cfg, got)
		}
		if got := a.lanePort(inv, "chat", 8091); got != 8091 {
			t.Errorf("%s: a keep-warm lane's route at 8091 is reported at %d", cfg, got)
		}
		if got := a.servedPort(inv, "gone", 7000); got != 7000 {
			t.Errorf("%s: a lane the pool does not know at port %d, want the step's 7000", cfg, got)
		}
	}
}
