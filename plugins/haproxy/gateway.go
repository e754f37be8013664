package haproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"poolc.dev/poolc/internal/atomicfile"
	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/internal/spelling"
	"poolc.dev/poolc/pools"
)

// Files reads and writes the gateway host's files: the map and the server
// state that make runtime changes survive a restart, and the node names of
// the endpoints.
type Files interface {
	// WriteFile replaces path with data atomically.
	WriteFile(ctx context.Context, path string, data []byte) error
	// ReadFile returns the content of path, nil when it does not exist.
	ReadFile(ctx context.Context, path string) ([]byte, error)
}

// LocalFiles writes files on this machine.
type LocalFiles struct{}

// WriteFile implements Files.
func (LocalFiles) WriteFile(_ context.Context, path string, data []byte) error {
	return atomicfile.Write(path, data, 0o644)
}

// ReadFile implements Files.
func (LocalFiles) ReadFile(_ context.Context, path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// Gateway flips the routes of a pool's aliases on one HAProxy. It keeps
// no state of its own: every call reads HAProxy's.
type Gateway struct {
	rt         Runtime
	files      Files
	mapFile    string
	state      string
	configFile string
	declared   *Spec
	aliases    []AliasRoute // the pool's (Options.Aliases); nil: not known
	master     Dialer
	// mu: a route's changes hold it shared, a reload alone.
	mu sync.RWMutex
	// rewrite: one persist at a time, which rewrites the files and syncs
	// the runtime fallback map (routes run in parallel under mu shared;
	// two syncs of the map would both delete what one of them read).
	rewrite sync.Mutex
	drain   time.Duration
	poll    time.Duration
}

// Options configure a Gateway; zero durations mean the defaults.
type Options struct {
	// MapFile and StateFile are the paths of the map and the server state
	// file, as the HAProxy configuration names them.
	MapFile   string
	StateFile string
	// DrainTimeout bounds the wait for the sessions of a server a route
	// left to end (default DefaultDrainTimeout).
	DrainTimeout time.Duration
	// Poll is the interval between session counts (default DefaultPoll).
	Poll time.Duration
	// ConfigFile, with Declared, is HAProxy's configuration, which the
	// gateway then keeps: rewritten after every change from Declared (its
	// lanes, aliases with fallbacks, bind and cloud) with every server's
	// address and state as HAProxy has them, so that a restart or reload
	// by anyone serves every route.
	ConfigFile string
	Declared   *Spec
	// Master reaches HAProxy's master CLI (haproxy -W -S ...): with it, a
	// route to a lane HAProxy has no backend for rewrites ConfigFile and
	// reloads HAProxy (no request lost: the old worker finishes its own).
	Master Dialer
	// Aliases are the pool's aliases with their lanes and fallbacks
	// (Declared's, when it is set): with them a route retires the servers
	// of lanes no alias is sent to or falls back to, and Observe reports
	// the live servers of lanes that no alias of the map routes to and
	// that are no alias's own lane (under pools.LaneServer). Nil: not
	// known, and neither is done.
	Aliases []AliasRoute
}

// The defaults of Options.
const (
	// DefaultDrainTimeout bounds the wait for the sessions of a server a
	// route left to end.
	DefaultDrainTimeout = 120 * time.Second
	// DefaultPoll is the interval between session counts while draining.
	DefaultPoll = 100 * time.Millisecond
)

// New returns the gateway whose admin socket dial reaches and whose files
// files writes.
func New(dial Dialer, files Files, o Options) (*Gateway, error) {
	files2 := map[string]string{"map file": o.MapFile, "state file": o.StateFile}
	if o.ConfigFile != "" || o.Declared != nil {
		if o.Declared == nil {
			return nil, fmt.Errorf("haproxy: a config file %s without the declared spec to write it from", o.ConfigFile)
		}
		files2["config file"] = o.ConfigFile
	}
	for what, p := range files2 {
		if !pathRE.MatchString(p) {
			return nil, fmt.Errorf("haproxy: %s %q: want an absolute path of letters, digits and ._/@+-", what, p)
		}
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Aliases == nil && o.Declared != nil {
		o.Aliases = o.Declared.Aliases
	}
	return &Gateway{rt: Runtime{Dial: dial}, files: files, mapFile: o.MapFile, state: o.StateFile,
		configFile: o.ConfigFile, declared: o.Declared, aliases: o.Aliases, master: o.Master, drain: o.DrainTimeout, poll: o.Poll}, nil
}

// Endpoint is where a route sends an alias: a lane at Addr:Port on a node,
// or the hosted fallback (Lane Cloud, no address). HAProxy knows only the
// address; the node's name is kept beside the map (nodesFile).
type Endpoint struct {
	Lane string
	Node string
	Addr string
	Port int
}

// String implements fmt.Stringer.
func (e Endpoint) String() string {
	if e.Lane == Cloud {
		return Cloud
	}
	return fmt.Sprintf("%s@%s", e.Lane, joinHostPort(e.Addr, e.Port))
}

// Route points alias at to, or removes it when to is nil, without a failed
// request: a lane endpoint's server is made ready first (a free slot of
// the lane's backend takes its address), then the map sends new requests
// of the alias there, then the lane's servers elsewhere (the old place of
// a moved lane) stop taking requests and, once their sessions have ended,
// go to maintenance. Requests in flight finish where they started. The
// map and server state files are rewritten so a restart keeps the route.
func (g *Gateway) Route(ctx context.Context, alias string, to *Endpoint, progress func(string)) error {
	if lane, ok := pools.LaneServerOf(alias); ok {
		return g.serveLane(ctx, lane, to, progress)
	}
	if !spelling.Alias.Allows(alias) {
		return fmt.Errorf("haproxy: alias %q is not an alias name", alias)
	}
	say := func(f string, a ...any) {
		if progress != nil {
			progress(fmt.Sprintf(f, a...))
		}
	}
	routes, err := g.routes(ctx)
	if err != nil {
		return err
	}
	if to == nil {
		g.mu.RLock()
		defer g.mu.RUnlock()
		if _, ok := routes[alias]; ok {
			if _, err := g.rt.Exec(ctx, "del", "map", g.mapFile, alias); err != nil {
				return err
			}
			say("alias %s removed", alias)
		}
		if err := g.persist(ctx); err != nil {
			return err
		}
		if err := g.retireUnrouted(ctx, "", say); err != nil {
			return err
		}
		return g.persist(ctx)
	}
	be := LaneBackendName(to.Lane)
	var leaving []Server
	if to.Lane != Cloud {
		if !spelling.Name.Allows(to.Lane) {
			return fmt.Errorf("haproxy: lane %q is not a lane name", to.Lane)
		}
		if err := checkEndpoint(to.Addr, to.Port); err != nil {
			return fmt.Errorf("haproxy: route %s to lane %s: %v", alias, to.Lane, err)
		}
		if err := g.ensureBackend(ctx, be, say); err != nil {
			return err
		}
	}
	if err := g.ensureFallbackDepth(ctx, say); err != nil {
		return err
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	if to.Lane != Cloud {
		if leaving, err = g.readyAt(ctx, be, to, say); err != nil {
			return err
		}
	}
	if cur, ok := routes[alias]; !ok {
		if _, err := g.rt.Exec(ctx, "add", "map", g.mapFile, alias, be); err != nil {
			return err
		}
	} else if cur != be {
		if _, err := g.rt.Exec(ctx, "set", "map", g.mapFile, alias, be); err != nil {
			return err
		}
	}
	say("alias %s routes to %s", alias, to)
	if err := g.settle(ctx, to, leaving, say); err != nil {
		return err
	}
	if err := g.retireUnrouted(ctx, be, say); err != nil {
		return err
	}
	return g.persist(ctx)
}

// serveLane readies lane's server at to, as a route does but with no
// alias in the map (a lane that aliases fall back to and none routes to:
// pools.LaneServer), and retires the lane's servers elsewhere; with to
// nil it retires every live server of the lane unless an alias of the
// map routes to it.
func (g *Gateway) serveLane(ctx context.Context, lane string, to *Endpoint, progress func(string)) error {
	if !spelling.Name.Allows(lane) || lane == Cloud {
		return fmt.Errorf("haproxy: %q is not a lane name", lane)
	}
	say := func(f string, a ...any) {
		if progress != nil {
			progress(fmt.Sprintf(f, a...))
		}
	}
	be := LaneBackendName(lane)
	var leaving []Server
	if to == nil {
		routes, err := g.routes(ctx)
		if err != nil {
			return err
		}
		for _, used := range routes {
			if used == be {
				return nil // an alias's route uses the server
			}
		}
		// Every backend's servers: a lane whose backend is gone has none.
		srvs, err := g.allServers(ctx)
		if err != nil {
			return err
		}
		for _, s := range srvs {
			if s.Backend == be && !s.Maint() {
				leaving = append(leaving, s)
			}
		}
	} else {
		if to.Lane != lane {
			return fmt.Errorf("haproxy: the server of lane %s cannot be lane %s's", lane, to.Lane)
		}
		if err := checkEndpoint(to.Addr, to.Port); err != nil {
			return fmt.Errorf("haproxy: server of lane %s: %v", lane, err)
		}
		if err := g.ensureBackend(ctx, be, say); err != nil {
			return err
		}
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	if to != nil {
		var err error
		if leaving, err = g.readyAt(ctx, be, to, say); err != nil {
			return err
		}
		say("lane %s is served at %s for the aliases falling back to it", lane, to)
	}
	return g.settle(ctx, to, leaving, say)
}

// settle records where a route step sent its alias or lane server (the
// node of to's address, the map and server state) and retires the
// servers leaving, recording again once they are in maintenance.
func (g *Gateway) settle(ctx context.Context, to *Endpoint, leaving []Server, say func(string, ...any)) error {
	if to != nil && to.Lane != Cloud && to.Node != "" {
		if err := g.nameNode(ctx, joinHostPort(to.Addr, to.Port), to.Node); err != nil {
			return err
		}
	}
	if err := g.persist(ctx); err != nil {
		return err
	}
	for _, s := range leaving {
		if err := g.retire(ctx, s, say); err != nil {
			return err
		}
	}
	return g.persist(ctx)
}

// retireUnrouted retires the live servers (ready or draining) of every
// lane backend that no alias is sent to, directly or as a fallback, other
// than keep (the backend a route step just readied) and those of the
// declared aliases' lanes and fallbacks: the servers a route
// away, an alias removed or a step cut off left behind, which would
// otherwise keep pointing at a stopped lane and fill the backend's slots.
func (g *Gateway) retireUnrouted(ctx context.Context, keep string, say func(string, ...any)) error {
	if g.aliases == nil {
		return nil // which lanes the pool still routes to is not known here
	}
	routes, err := g.routes(ctx)
	if err != nil {
		return err
	}
	used := map[string]bool{keep: true}
	for _, be := range routes {
		used[be] = true
	}
	// A lane the pool routes to (a route step of another alias may be
	// readying it now) or falls back to is kept.
	for _, a := range g.aliases {
		used[LaneBackendName(a.Lane)] = true
		for _, f := range a.Fallbacks {
			used[LaneBackendName(f)] = true
		}
	}
	srvs, err := g.allServers(ctx)
	if err != nil {
		return err
	}
	for _, s := range srvs {
		if laneOfBackend(s.Backend) == "" || s.Backend == Cloud || used[s.Backend] || s.Maint() {
			continue
		}
		if err := g.retire(ctx, s, say); err != nil {
			return err
		}
	}
	return nil
}

// readyAt makes a server of backend be ready at to's address and returns
// the backend's other live servers, which must now leave.
func (g *Gateway) readyAt(ctx context.Context, be string, to *Endpoint, say func(string, ...any)) ([]Server, error) {
	srvs, err := g.servers(ctx, be)
	if err != nil {
		return nil, err
	}
	var target *Server
	for i := range srvs {
		if srvs[i].Addr == to.Addr && srvs[i].Port == to.Port && !srvs[i].Maint() {
			target = &srvs[i]
		}
	}
	if target == nil {
		for i := range srvs {
			if srvs[i].Addr == to.Addr && srvs[i].Port == to.Port {
				target = &srvs[i]
			}
		}
	}
	if target == nil {
		for i := range srvs {
			if srvs[i].Maint() {
				target = &srvs[i]
				break
			}
		}
		if target == nil {
			// A server left draining (a route step cut off) whose
			// sessions have ended is poolc's leftover: it takes the route.
			for i := range srvs {
				if srvs[i].Draining() {
					if n, err := g.Sessions(ctx, be, srvs[i].Name); err == nil && n == 0 {
						target = &srvs[i]
						break
					}
				}
			}
		}
		if target == nil {
			return nil, fmt.Errorf("haproxy: backend %s has no free server for %s: every one of its %s is live (still draining?)", be, to, plural.Count(len(srvs), "server"))
		}
		if _, err := g.rt.Exec(ctx, "set", "server", be+"/"+target.Name, "addr", to.Addr, "port", strconv.Itoa(to.Port)); err != nil {
			return nil, err
		}
		target.Addr, target.Port = to.Addr, to.Port
	}
	if !target.Ready() {
		if _, err := g.rt.Exec(ctx, "set", "server", be+"/"+target.Name, "state", "ready"); err != nil {
			return nil, err
		}
		say("server %s/%s ready at %s", be, target.Name, joinHostPort(to.Addr, to.Port))
	}
	if err := g.waitUp(ctx, be, target.Name); err != nil {
		return nil, err
	}
	var leaving []Server
	for _, s := range srvs {
		if s.Name != target.Name && !s.Maint() {
			leaving = append(leaving, s)
		}
	}
	return leaving, nil
}

// upWait bounds the wait for a server made ready to pass its health check.
const upWait = 30 * time.Second

// waitUp waits until server be/name is up (its health check passed), so
// that the map sends nothing to a server HAProxy still counts down (and
// would send to the alias's fallbacks instead).
func (g *Gateway) waitUp(ctx context.Context, be, name string) error {
	deadline := time.Now().Add(upWait)
	for {
		srvs, err := g.servers(ctx, be)
		if err != nil {
			return err
		}
		for _, s := range srvs {
			if s.Name == name && s.Op == 2 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("haproxy: server %s/%s is not up %s after it was made ready: its health check (GET /health) fails", be, name, upWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(g.poll):
		}
	}
}

// retire stops new requests to s, waits for its sessions to end (up to the
// drain timeout) and puts it in maintenance.
func (g *Gateway) retire(ctx context.Context, s Server, say func(string, ...any)) error {
	id := s.Backend + "/" + s.Name
	if _, err := g.rt.Exec(ctx, "set", "server", id, "state", "drain"); err != nil {
		return err
	}
	deadline := time.Now().Add(g.drain)
	reported := -1
	for {
		n, err := g.Sessions(ctx, s.Backend, s.Name)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("haproxy: server %s (%s) still has %s after %s", id, joinHostPort(s.Addr, s.Port), plural.Count(n, "session"), g.drain)
		}
		if n != reported {
			say("server %s draining: %s", id, plural.Count(n, "session"))
			reported = n
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(g.poll):
		}
	}
	_, err := g.rt.Exec(ctx, "set", "server", id, "state", "maint")
	if err == nil {
		say("server %s (%s) drained and in maintenance", id, joinHostPort(s.Addr, s.Port))
	}
	return err
}

// Sessions returns the current sessions of server be/srv.
func (g *Gateway) Sessions(ctx context.Context, be, srv string) (int, error) {
	out, err := g.rt.Exec(ctx, "show", "stat")
	if err != nil {
		return 0, err
	}
	m, err := parseSessions(out)
	if err != nil {
		return 0, err
	}
	n, ok := m[be+"/"+srv]
	if !ok {
		return 0, fmt.Errorf("haproxy: show stat has no server %s/%s", be, srv)
	}
	return n, nil
}

func (g *Gateway) routes(ctx context.Context) (map[string]string, error) {
	out, err := g.rt.Exec(ctx, "show", "map", g.mapFile)
	if err != nil {
		return nil, err
	}
	return parseMap(out)
}

// allServers is every server of every backend, as HAProxy has them now.
func (g *Gateway) allServers(ctx context.Context) ([]Server, error) {
	out, err := g.rt.Exec(ctx, "show", "servers", "state")
	if err != nil {
		return nil, err
	}
	return parseServersState(out)
}

func (g *Gateway) servers(ctx context.Context, be string) ([]Server, error) {
	out, err := g.rt.Exec(ctx, "show", "servers", "state", be)
	if err != nil {
		return nil, err
	}
	return parseServersState(out)
}

// persist writes the map and the server state as HAProxy has them now.
// One persist runs at a time (g.rewrite), so the last to write read the
// latest of parallel routes' changes.
func (g *Gateway) persist(ctx context.Context) error { return g.persistAll(ctx, false) }

// persistForReload is persist before a reload: the configuration file
// gets the rules the declared spec needs (see writeConfig).
func (g *Gateway) persistForReload(ctx context.Context) error { return g.persistAll(ctx, true) }

func (g *Gateway) persistAll(ctx context.Context, forReload bool) error {
	g.rewrite.Lock()
	defer g.rewrite.Unlock()
	routes, err := g.routes(ctx)
	if err != nil {
		return err
	}
	if err := g.files.WriteFile(ctx, g.mapFile, []byte(formatMap(routes))); err != nil {
		return fmt.Errorf("haproxy: writing %s: %w", g.mapFile, err)
	}
	state, err := g.rt.Exec(ctx, "show", "servers", "state")
	if err != nil {
		return err
	}
	if err := g.files.WriteFile(ctx, g.state, []byte(state)); err != nil {
		return fmt.Errorf("haproxy: writing %s: %w", g.state, err)
	}
	if g.configFile == "" {
		return nil
	}
	return g.writeConfig(ctx, forReload)
}

// nodesFile is beside the map file: the node name of each endpoint
// address (a JSON object of "ADDR:PORT": "NODE"), since HAProxy's servers
// have addresses only.
func (g *Gateway) nodesFile() string { return g.mapFile + ".nodes" }

func (g *Gateway) nodeNames(ctx context.Context) (map[string]string, error) {
	b, err := g.files.ReadFile(ctx, g.nodesFile())
	if err != nil {
		return nil, fmt.Errorf("haproxy: reading %s: %w", g.nodesFile(), err)
	}
	names := map[string]string{}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &names); err != nil {
			return nil, fmt.Errorf("haproxy: %s: %v", g.nodesFile(), err)
		}
	}
	return names, nil
}

// nameNode records that addr is on node.
func (g *Gateway) nameNode(ctx context.Context, addr, node string) error {
	names, err := g.nodeNames(ctx)
	if err != nil {
		return err
	}
	if names[addr] == node {
		return nil
	}
	names[addr] = node
	b, _ := json.MarshalIndent(names, "", "  ")
	if err := g.files.WriteFile(ctx, g.nodesFile(), append(b, '\n')); err != nil {
		return fmt.Errorf("haproxy: writing %s: %w", g.nodesFile(), err)
	}
	return nil
}

// Observed is an alias's route as HAProxy has it: the backend's ready
// servers (none for the cloud backend or a lane nowhere yet).
type Observed struct {
	Alias     string
	Lane      string
	Endpoints []Endpoint
	// Draining counts the backend's servers left draining: a route step
	// cut off before it put them in maintenance.
	Draining int
}

// Observe reads every alias of the map and where its backend sends it.
func (g *Gateway) Observe(ctx context.Context) ([]Observed, error) {
	routes, err := g.routes(ctx)
	if err != nil {
		return nil, err
	}
	srvs, err := g.allServers(ctx)
	if err != nil {
		return nil, err
	}
	names, err := g.nodeNames(ctx)
	if err != nil {
		return nil, err
	}
	aliases := make([]string, 0, len(routes))
	for a := range routes {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	var obs []Observed
	for _, a := range aliases {
		o := Observed{Alias: a, Lane: laneOfBackend(routes[a])}
		for _, s := range srvs {
			switch {
			case s.Backend == routes[a] && s.Ready():
				o.Endpoints = append(o.Endpoints, Endpoint{Lane: o.Lane, Node: names[joinHostPort(s.Addr, s.Port)], Addr: s.Addr, Port: s.Port})
			case s.Backend == routes[a] && s.Draining():
				o.Draining++
			}
		}
		obs = append(obs, o)
	}
	if g.aliases == nil {
		return obs, nil
	}
	return append(obs, laneServers(routes, g.aliases, srvs, names)...), nil
}

// laneServers observes the live servers (ready or draining) of each lane
// backend that no alias of the map routes to and that is no alias's own
// lane in aliases, under the lane's server route key (pools.LaneServer):
// a lane the aliases only fall back to, or a server left behind by a
// lane that went, so that the plan sees where the gateway sends it. (An
// alias's own lane that its route does not use now, unplaced, keeps its
// server for its return.) names gives the node of an address.
func laneServers(routes map[string]string, aliases []AliasRoute, srvs []Server, names map[string]string) []Observed {
	routed := make(map[string]bool, len(routes)+len(aliases))
	for _, be := range routes {
		routed[be] = true
	}
	for _, a := range aliases {
		routed[LaneBackendName(a.Lane)] = true
	}
	byLane := map[string]*Observed{}
	var lanes []string
	for _, s := range srvs {
		lane := laneOfBackend(s.Backend)
		if lane == "" || s.Backend == Cloud || routed[s.Backend] || !s.Ready() && !s.Draining() {
			continue
		}
		o := byLane[lane]
		if o == nil {
			o = &Observed{Alias: pools.LaneServer(lane), Lane: lane}
			byLane[lane] = o
			lanes = append(lanes, lane)
		}
		if s.Ready() {
			o.Endpoints = append(o.Endpoints, Endpoint{Lane: lane, Node: names[joinHostPort(s.Addr, s.Port)], Addr: s.Addr, Port: s.Port})
		} else {
			o.Draining++
		}
	}
	sort.Strings(lanes)
	out := make([]Observed, 0, len(lanes))
	for _, l := range lanes {
		out = append(out, *byLane[l])
	}
	return out
}

var _ Files = LocalFiles{}
