package haproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"poolc.dev/poolc/internal/configschema"
	"poolc.dev/poolc/internal/sshx"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
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
	// pools.DefaultRouterPort).
	RouterPort int `json:"router_port"`
	// ConfigFile is HAProxy's configuration file, which poolc then keeps
	// (see Options.ConfigFile); MasterSocket is HAProxy's master CLI
	// (haproxy -W -S PATH, or ipv4@127.0.0.1:PORT with ssh_host), through
	// which poolc reloads HAProxy when a new lane needs a backend. Bind
	// and Cloud are the frontend's address (default DefaultBind) and the
	// hosted fallback, as poolc gateway config takes them.
	ConfigFile   string `json:"config_file"`
	MasterSocket string `json:"master_socket"`
	Bind         string `json:"bind"`
	Cloud        string `json:"cloud"`
}

// ConfigSchema is the CUE schema of the config block.
const ConfigSchema = `{
	` + sshx.SettingsSchema + `
	admin_socket: ` + configschema.AbsNodePath + ` | =~"^(ipv4|ipv6|unix)@[!-~]{1,1000}$"
	map_file:     ` + configschema.AbsNodePath + `
	state_file:   ` + configschema.AbsNodePath + `
	ssh_host?:    ` + configschema.Host + `
	ssh_port?:    int & >=1 & <=65535
	drain_timeout_seconds?: number & >0
	router_port?:           int & >=1 & <=65535
	config_file?:           string
	master_socket?:         string
	bind?:                  string
	cloud?:                 string
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
	var dial, master Dialer
	var files Files = LocalFiles{}
	masterTCP, masterIsTCP := strings.CutPrefix(cfg.MasterSocket, "ipv4@")
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
		if cfg.MasterSocket != "" {
			if !masterIsTCP {
				return sdk.ConfigureResponse{Diagnostics: sdk.Errorf([]string{"master_socket"}, "with ssh_host, the master socket must be ipv4@127.0.0.1:PORT on that host")}
			}
			master = Tunnel(client, masterTCP)
		}
	case isTCP:
		dial = localDialer(cfg.AdminSocket)
	default:
		dial = UnixSocket(cfg.AdminSocket)
	}
	if cfg.MasterSocket != "" && master == nil {
		master = localDialer(cfg.MasterSocket)
	}
	var declared *Spec
	if cfg.ConfigFile != "" {
		spec := DeclaredSpec(req.Inventory, cfg.Bind, cfg.Cloud)
		spec.AdminSocket, spec.MapFile, spec.StateFile = cfg.AdminSocket, cfg.MapFile, cfg.StateFile
		if _, _, err := Config(spec); err != nil {
			return sdk.ConfigureResponse{Diagnostics: sdk.Errorf([]string{"config_file"}, err.Error())}
		}
		declared = &spec
	}
	gw, err := New(dial, files, Options{MapFile: cfg.MapFile, StateFile: cfg.StateFile,
		DrainTimeout: time.Duration(cfg.DrainTimeoutSeconds * float64(time.Second)),
		ConfigFile:   cfg.ConfigFile, Declared: declared, Master: master,
		Aliases: DeclaredSpec(req.Inventory, "", "").Aliases})
	if err != nil {
		return sdk.ConfigureResponse{Diagnostics: sdk.Errorf([]string{"map_file"}, err.Error())}
	}
	a.gw, a.inv, a.routerPort = gw, req.Inventory, cfg.RouterPort
	if a.routerPort == 0 {
		a.routerPort = pools.DefaultRouterPort
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

// servedPort is the port HAProxy sends endpoint e to: its node's
// router's when e reaches the lane through the router (an on-demand lane,
// which the llama plugin serves from the router); else e's port, or the
// lane's own as the pool declares it when e names none. (A lane replaced
// on its node runs at a spare port for a while.)
func (a *Actuator) servedPort(inv sdk.Inventory, e sdk.LaneEndpoint) int {
	if e.Router {
		return a.routerPort
	}
	if e.Port == 0 {
		return declaredPort(inv, e.Lane)
	}
	return e.Port
}

// observedAt is the endpoint of lane that HAProxy sends to port, in
// poolc's terms: at the router's port, the lane reached through its
// node's router and named at its own port as the pool declares it (as
// the llama plugin reports a router's models); else the lane's process
// at port.
func (a *Actuator) observedAt(inv sdk.Inventory, lane string, port int) (int, bool) {
	if port != a.routerPort {
		return port, false
	}
	if p := declaredPort(inv, lane); p > 0 {
		return p, true
	}
	return port, true
}

// declaredPort is the lane's port as the pool declares it, 0 for a lane
// the inventory does not hold.
func declaredPort(inv sdk.Inventory, lane string) int {
	for _, l := range inv.Lanes {
		if l.Name == lane {
			return l.Port
		}
	}
	return 0
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
		to.Port = a.servedPort(inv, *st.Route.To)
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
// progress) is reported with a warning at the first. One sent to the
// router's port reaches its lane through the node's router. A gateway
// whose runtime API or map cannot be read is reported unobserved, with the
// cause.
func (a *Actuator) Observe(ctx context.Context, _ sdk.ObserveRequest) sdk.ObserveResponse {
	gw, inv, err := a.gateway()
	if err != nil {
		return sdk.ObserveResponse{Diagnostics: sdk.Errorf(nil, err.Error())}
	}
	obs, err := gw.Observe(ctx)
	if err != nil {
		// Unknown, not empty: poolc keeps the routes it recorded.
		return sdk.ObserveResponse{Fleet: sdk.Fleet{Unobserved: []sdk.Unobserved{{Kind: sdk.TargetGateway, Cause: sdk.CauseOf(err), Detail: err.Error()}}}}
	}
	stale, err := gw.StaleFallbacks(ctx)
	if err != nil {
		return sdk.ObserveResponse{Fleet: sdk.Fleet{Unobserved: []sdk.Unobserved{{Kind: sdk.TargetGateway, Cause: sdk.CauseOf(err), Detail: err.Error()}}}}
	}
	var resp sdk.ObserveResponse
	for _, o := range obs {
		switch {
		case slices.Contains(stale, o.Alias) && o.Lane != "":
			// Fallbacks HAProxy does not try as the pool declares them:
			// the route is reported on no node, as a split one is, so the
			// next plan routes the alias again, which rewrites them (and
			// reloads HAProxy when its rules try fewer).
			resp.Diagnostics = append(resp.Diagnostics, sdk.Diagnostic{Severity: sdk.Warning,
				Summary: fmt.Sprintf("alias %s: the gateway does not try its fallbacks as the pool declares them; the next apply routes it again, which sets them", o.Alias)})
			resp.Fleet.Routes = append(resp.Fleet.Routes, sdk.Route{Alias: o.Alias, Lane: sdk.LaneEndpoint{Lane: o.Lane}})
			continue
		case o.Lane == Cloud:
			resp.Fleet.Routes = append(resp.Fleet.Routes, sdk.Route{Alias: o.Alias, Lane: sdk.LaneEndpoint{Lane: sdk.Cloud}})
			continue
		case o.Lane == "" || len(o.Endpoints) == 0:
			continue
		case len(o.Endpoints) > 1 || o.Draining > 0:
			// An alias split over several places (a route step cut off
			// between readying the new server and retiring the old) is
			// reported on no node: it then differs from any route poolc
			// plans, so the next plan routes it again, which retires the
			// other places.
			resp.Diagnostics = append(resp.Diagnostics, sdk.Diagnostic{Severity: sdk.Warning,
				Summary: fmt.Sprintf("alias %s: lane %s is ready at %d places, %d server(s) left draining; the next apply routes it to one", o.Alias, o.Lane, len(o.Endpoints), o.Draining)})
			resp.Fleet.Routes = append(resp.Fleet.Routes, sdk.Route{Alias: o.Alias, Lane: sdk.LaneEndpoint{Lane: o.Lane}})
			continue
		}
		e := o.Endpoints[0]
		if e.Node == "" {
			e.Node = nodeAt(ctx, inv, e.Addr)
		}
		port, router := a.observedAt(inv, o.Lane, e.Port)
		resp.Fleet.Routes = append(resp.Fleet.Routes, sdk.Route{Alias: o.Alias,
			Lane: sdk.LaneEndpoint{Lane: o.Lane, Node: e.Node, Address: e.Addr, Port: port, Router: router}})
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

// localDialer reaches a socket of HAProxy's on this machine: a unix
// socket's path, or ipv4@IP:PORT.
func localDialer(socket string) Dialer {
	if tcp, ok := strings.CutPrefix(socket, "ipv4@"); ok {
		return func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", tcp)
		}
	}
	return UnixSocket(socket)
}

// DefaultBind is the frontend's address when neither the plugin's bind
// nor poolc gateway config --bind says otherwise.
const DefaultBind = "0.0.0.0:8000"

// DeclaredSpec is the gateway a pool declares: a backend per lane, its
// aliases with their fallbacks, bound at bind (DefaultBind when "") with
// the hosted fallback at cloud. The files and sockets are left to the
// caller.
func DeclaredSpec(inv sdk.Inventory, bind, cloud string) Spec {
	if bind == "" {
		bind = DefaultBind
	}
	spec := Spec{Bind: bind, CloudAddr: cloud}
	for _, l := range inv.Lanes {
		spec.Lanes = append(spec.Lanes, LaneBackend{Lane: l.Name})
	}
	for _, a := range inv.Aliases {
		spec.Aliases = append(spec.Aliases, AliasRoute{Alias: a.Name, Lane: a.Lane, Fallbacks: a.Fallbacks})
	}
	return spec
}
