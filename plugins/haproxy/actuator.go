package haproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"poolc.dev/poolc/internal/sshx"
	"poolc.dev/poolc/plugins/llama"
	"poolc.dev/poolc/plugins/sdk"
)

// Actuator is the built-in "haproxy" actuator: the sdk.Actuator carrying
// out the pool's route steps on a HAProxy gateway.
type Actuator struct {
	version string

	mu         sync.Mutex
	inv        sdk.Inventory
	gw         *Gateway
	pool       *sshx.Pool
	routerPort int
}

var _ sdk.Actuator = (*Actuator)(nil)

// NewActuator returns the actuator reporting version.
func NewActuator(version string) *Actuator { return &Actuator{version: version} }

// PluginConfig is the actuator's config block. With SSHHost set, the admin
// socket (then "ipv4@127.0.0.1:PORT") and the files are on that host,
// reached over SSH.
type PluginConfig struct {
	sshx.Settings
	AdminSocket         string  `json:"admin_socket"`
	MapFile             string  `json:"map_file"`
	StateFile           string  `json:"state_file"`
	SSHHost             string  `json:"ssh_host"`
	SSHPort             int     `json:"ssh_port"`
	DrainTimeoutSeconds float64 `json:"drain_timeout_seconds"`
	// RouterPort is where the llama plugin's node routers listen: an
	// on-demand lane is reached there, not at its own port. It must match
	// the llama block's router_port (both default to
	// llama.DefaultRouterPort).
	RouterPort int `json:"router_port"`
}

// ConfigSchema is the CUE schema of the config block.
const ConfigSchema = `{
	` + sshx.SettingsSchema + `
	admin_socket: string
	map_file:     string
	state_file:   string
	ssh_host?:    string
	ssh_port?:    int & >=1 & <=65535
	drain_timeout_seconds?: number & >0
	router_port?:           int & >=1 & <=65535
}`

// Describe implements sdk.Actuator.
func (a *Actuator) Describe(context.Context, sdk.DescribeRequest) sdk.DescribeResponse {
	return sdk.DescribeResponse{Name: "haproxy", Version: a.version, StepKinds: sdk.GatewayKinds, ConfigSchema: ConfigSchema,
		Capabilities: sdk.Capabilities{Observes: []string{sdk.ObserveRoutes}, ApplyObserves: true}}
}

// Configure implements sdk.Actuator.
func (a *Actuator) Configure(_ context.Context, req sdk.ConfigureRequest) sdk.ConfigureResponse {
	var cfg PluginConfig
	if ds := sdk.DecodeConfig(ConfigSchema, req.ConfigJSON, &cfg); ds.HasErrors() {
		return sdk.ConfigureResponse{Diagnostics: ds}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pool != nil {
		a.pool.Close()
		a.pool = nil
	}
	var dial Dialer
	var files Files = LocalFiles{}
	tcp, isTCP := strings.CutPrefix(cfg.AdminSocket, "ipv4@")
	switch {
	case cfg.SSHHost != "":
		if !isTCP {
			return sdk.ConfigureResponse{Diagnostics: sdk.Errorf([]string{"admin_socket"}, "with ssh_host, the admin socket must be ipv4@127.0.0.1:PORT on that host")}
		}
		pool, err := sshx.NewPool(cfg.Settings.Config())
		if err != nil {
			return sdk.ConfigureResponse{Diagnostics: sdk.Errorf([]string{"known_hosts"}, err.Error())}
		}
		a.pool = pool
		client := pool.Client(sshx.Endpoint{User: cfg.LoginUser(""), Host: cfg.SSHHost, Port: cfg.SSHPort})
		dial, files = Tunnel(client, tcp), SSHFiles{Client: client}
	case isTCP:
		dial = func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", tcp)
		}
	default:
		dial = UnixSocket(cfg.AdminSocket)
	}
	gw, err := New(dial, files, Options{MapFile: cfg.MapFile, StateFile: cfg.StateFile,
		DrainTimeout: time.Duration(cfg.DrainTimeoutSeconds * float64(time.Second))})
	if err != nil {
		return sdk.ConfigureResponse{Diagnostics: sdk.Errorf([]string{"map_file"}, err.Error())}
	}
	a.gw, a.inv, a.routerPort = gw, req.Inventory, cfg.RouterPort
	if a.routerPort == 0 {
		a.routerPort = llama.DefaultRouterPort
	}
	return sdk.ConfigureResponse{}
}

func (a *Actuator) gateway() (*Gateway, sdk.Inventory, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gw == nil {
		return nil, sdk.Inventory{}, errors.New("haproxy: not configured")
	}
	return a.gw, a.inv, nil
}

// lanePort inverts servedPort for a route observed at port: an
// on-demand lane's route, at its router's port, is reported at the
// lane's own port, as poolc plans routes.
func (a *Actuator) lanePort(inv sdk.Inventory, lane string, port int) int {
	for _, l := range inv.Lanes {
		if l.Name == lane && l.Residency == sdk.OnDemand && port == a.routerPort && l.Port > 0 {
			return l.Port
		}
	}
	return port
}

// servedPort is the port a lane that a route or HAProxy puts at port is
// reached at: its node's router's when the pool makes it on-demand (the
// llama plugin serves those from the router); else port, unless that is
// the router's or 0, then the lane's own. (A lane replaced on its node
// runs at a spare port for a while: any port but the router's is its.)
func (a *Actuator) servedPort(inv sdk.Inventory, lane string, port int) int {
	for _, l := range inv.Lanes {
		if l.Name != lane {
			continue
		}
		if l.Residency == sdk.OnDemand {
			return a.routerPort
		}
		if port == 0 || port == a.routerPort {
			return l.Port
		}
		return port
	}
	return port
}

// resolveEndpoint is where a route goes; a lane's address is resolved to an IP,
// since HAProxy's set server addr takes only addresses.
func resolveEndpoint(ctx context.Context, e *sdk.LaneEndpoint) (*Endpoint, error) {
	if e == nil {
		return nil, nil
	}
	if e.Lane == sdk.Cloud {
		return &Endpoint{Lane: Cloud}, nil
	}
	addr := e.Address
	if net.ParseIP(addr) == nil {
		ips, err := net.DefaultResolver.LookupIP(ctx, "ip", addr)
		if err != nil || len(ips) == 0 {
			return nil, fmt.Errorf("lane %s: address %q does not resolve: %v", e.Lane, addr, err)
		}
		addr = ips[0].String()
	}
	return &Endpoint{Lane: e.Lane, Node: e.Node, Addr: addr, Port: e.Port}, nil
}

// Apply implements sdk.Actuator.
func (a *Actuator) Apply(ctx context.Context, req sdk.ApplyRequest, progress sdk.ProgressFunc) sdk.ApplyResponse {
	st := req.Step
	if st.Kind != sdk.KindRoute || st.Route == nil {
		return sdk.ApplyResponse{Diagnostics: sdk.Errorf(nil, fmt.Sprintf("haproxy carries out route steps only, not %s", st.Kind))}
	}
	gw, inv, err := a.gateway()
	if err != nil {
		return sdk.ApplyResponse{Diagnostics: sdk.Errorf(nil, err.Error())}
	}
	to, err := resolveEndpoint(ctx, st.Route.To)
	if err != nil {
		return sdk.ApplyResponse{Diagnostics: sdk.Errorf(nil, err.Error())}
	}
	if to != nil && to.Lane != Cloud {
		to.Port = a.servedPort(inv, to.Lane, to.Port)
	}
	err = gw.Route(ctx, st.Route.Alias, to, func(s string) {
		if progress != nil {
			progress(sdk.Progress{Message: s, Fraction: -1})
		}
	})
	if err != nil {
		return sdk.ApplyResponse{Retryable: sshx.Retryable(err) || isNetErr(err), Diagnostics: sdk.Errorf(nil, err.Error())}
	}
	observed := &sdk.Fleet{}
	if st.Route.To != nil {
		observed.Routes = []sdk.Route{{Alias: st.Route.Alias, Lane: *st.Route.To}}
	}
	return sdk.ApplyResponse{Observed: observed}
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

// Observe implements sdk.Actuator: each alias of the map with the lane
// endpoint its backend sends it to. An alias whose backend has no ready
// server routes nowhere and is left out; one with two (a move in
// progress) is reported with a warning at the first.
func (a *Actuator) Observe(ctx context.Context, _ sdk.ObserveRequest) sdk.ObserveResponse {
	gw, inv, err := a.gateway()
	if err != nil {
		return sdk.ObserveResponse{Diagnostics: sdk.Errorf(nil, err.Error())}
	}
	obs, err := gw.Observe(ctx)
	if err != nil {
		return sdk.ObserveResponse{Diagnostics: sdk.Errorf(nil, err.Error())}
	}
	var resp sdk.ObserveResponse
	for _, o := range obs {
		switch {
		case o.Lane == Cloud:
			resp.Fleet.Routes = append(resp.Fleet.Routes, sdk.Route{Alias: o.Alias, Lane: sdk.LaneEndpoint{Lane: sdk.Cloud}})
			continue
		case o.Lane == "" || len(o.Endpoints) == 0:
			continue
		case len(o.Endpoints) > 1:
			// An alias split over several places (a route step cut off
			// between readying the new server and retiring the old) is
			// reported on no node: it then differs from any route poolc
			// plans, so the next plan routes it again, which retires the
			// other places.
			resp.Diagnostics = append(resp.Diagnostics, sdk.Diagnostic{Severity: sdk.Warning,
				Summary: fmt.Sprintf("alias %s: lane %s is ready at %d places; the next apply routes it to one", o.Alias, o.Lane, len(o.Endpoints))})
			resp.Fleet.Routes = append(resp.Fleet.Routes, sdk.Route{Alias: o.Alias, Lane: sdk.LaneEndpoint{Lane: o.Lane}})
			continue
		}
		e := o.Endpoints[0]
		if want := a.servedPort(inv, o.Lane, e.Port); want != e.Port {
			// The lane moved between its own port and its node's router
			// (a residency change in place): the route is stale, and is
			// reported on no node so the next apply routes it again.
			resp.Diagnostics = append(resp.Diagnostics, sdk.Diagnostic{Severity: sdk.Warning,
				Summary: fmt.Sprintf("alias %s: lane %s is routed to port %d but served at %d; the next apply routes it there", o.Alias, o.Lane, e.Port, want)})
			resp.Fleet.Routes = append(resp.Fleet.Routes, sdk.Route{Alias: o.Alias, Lane: sdk.LaneEndpoint{Lane: o.Lane}})
			continue
		}
		if e.Node == "" {
			e.Node = nodeAt(ctx, inv, e.Addr)
		}
		e.Port = a.lanePort(inv, o.Lane, e.Port)
		resp.Fleet.Routes = append(resp.Fleet.Routes, sdk.Route{Alias: o.Alias,
			Lane: sdk.LaneEndpoint{Lane: o.Lane, Node: e.Node, Address: e.Addr, Port: e.Port}})
	}
	return resp
}

// nodeAt names the pool node whose address is addr (or resolves to it),
// "" when none does: for routes poolc did not set.
func nodeAt(ctx context.Context, inv sdk.Inventory, addr string) string {
	for _, n := range inv.GatewayNodes {
		if n.Address == addr {
			return n.Name
		}
	}
	for _, n := range inv.GatewayNodes {
		if ips, err := net.DefaultResolver.LookupIP(ctx, "ip", n.Address); err == nil {
			for _, ip := range ips {
				if ip.String() == addr {
					return n.Name
				}
			}
		}
	}
	return ""
}
