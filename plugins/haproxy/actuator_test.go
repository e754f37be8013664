package haproxy

import (
	"context"
	"testing"

	"poolc.dev/poolc/internal/testing/deadaddr"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/plugins/sdk/sdktest"
	"poolc.dev/poolc/pools"
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

// TestARouteThroughTheRouterIsReachedAtTheRouterPort: an on-demand lane
// is served by its node's router, so a route that says it reaches the
// lane through the router goes to the router's port (llama's default
// unless configured), the others to their own; and HAProxy sending an
// alias to the router's port is observed as such a route, at the lane's
// own port as the pool declares it.
func TestARouteThroughTheRouterIsReachedAtTheRouterPort(t *testing.T) {
	inv := sdk.Inventory{Gateway: true, Lanes: []sdk.LaneSpec{
		{Name: "vision", Port: 8083, Residency: sdk.OnDemand},
		{Name: "chat", Port: 8081, Residency: sdk.KeepWarm},
	}}
	for cfg, want := range map[string]int{
		`{"admin_socket":"/s","map_file":"/m","state_file":"/st"}`:                    pools.DefaultRouterPort,
		`{"admin_socket":"/s","map_file":"/m","state_file":"/st","router_port":9100}`: 9100,
	} {
		a := NewActuator("test")
		if r := a.Configure(context.Background(), sdk.ConfigureRequest{ConfigJSON: []byte(cfg), Inventory: inv}); r.Diagnostics.HasErrors() {
			t.Fatal(r.Diagnostics)
		}
		for _, c := range []struct {
			e    sdk.LaneEndpoint
			port int
		}{
			{sdk.LaneEndpoint{Lane: "vision", Port: 8083, Router: true}, want},
			// The pool makes chat on-demand: through the router, as the
			// step says, whatever the inventory.
			{sdk.LaneEndpoint{Lane: "chat", Port: 8081, Router: true}, want},
			// vision's own process while its residency crosses on-demand.
			{sdk.LaneEndpoint{Lane: "vision", Port: 8083}, 8083},
			{sdk.LaneEndpoint{Lane: "chat"}, 8081},
			{sdk.LaneEndpoint{Lane: "chat", Port: 8091}, 8091}, // a spare port
			{sdk.LaneEndpoint{Lane: "gone", Port: 7000}, 7000},
		} {
			if got := a.servedPort(inv, c.e); got != c.port {
				t.Errorf("%s: %+v is sent to port %d, want %d", cfg, c.e, got, c.port)
			}
		}
		for _, c := range []struct {
			lane   string
			at     int
			port   int
			router bool
		}{
			{"vision", want, 8083, true},
			{"chat", want, 8081, true},
			{"vision", 8083, 8083, false},
			{"chat", 8091, 8091, false},
			{"gone", want, want, true},
		} {
			if port, router := a.observedAt(inv, c.lane, c.at); port != c.port || router != c.router {
				t.Errorf("%s: %s sent to port %d is observed at %d (router %v), want %d (router %v)", cfg, c.lane, c.at, port, router, c.port, c.router)
			}
		}
	}
}

// TestAGatewayThatCannotBeReachedIsUnobserved: with nothing listening on
// the runtime API, Observe reports the gateway unobserved (refused), not
// a gateway without routes, which poolc would route again.
func TestAGatewayThatCannotBeReachedIsUnobserved(t *testing.T) {
	a := NewActuator("test")
	cfg := `{"admin_socket":"ipv4@` + deadaddr.TCP(t) + `","map_file":"/m","state_file":"/st"}`
	if r := a.Configure(context.Background(), sdk.ConfigureRequest{ConfigJSON: []byte(cfg), Inventory: sdk.Inventory{Gateway: true}}); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	obs := a.Observe(context.Background(), sdk.ObserveRequest{})
	if u := obs.Fleet.Unobserved; obs.Diagnostics.HasErrors() || len(u) != 1 || u[0].Kind != sdk.TargetGateway || u[0].Cause != sdk.CauseRefused || len(obs.Fleet.Routes) != 0 {
		t.Errorf("Observe with no runtime API: %+v", obs)
	}
}
