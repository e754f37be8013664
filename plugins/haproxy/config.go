package haproxy

import (
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"poolc.dev/poolc/internal/spelling"
)

// Spec is what a generated HAProxy configuration serves: the frontend's
// bind address, the admin socket, the files that keep runtime changes
// across a restart, the lanes (one backend each) and aliases of the pool,
// and the hosted fallback.
type Spec struct {
	// Bind is the frontend's address, e.g. "0.0.0.0:8000".
	Bind string
	// AdminSocket is the runtime API socket: a file path for a unix
	// socket, or "ipv4@127.0.0.1:9999" for TCP (to be reached through an
	// SSH tunnel).
	AdminSocket string
	// MapFile maps each alias to its backend.
	MapFile string
	// StateFile keeps server addresses and states set at runtime.
	StateFile string
	// Lanes are the lane backends; a lane with an endpoint starts ready
	// there, the others wait in maintenance for their first route.
	Lanes []LaneBackend
	// Aliases are routed through the map; each names a lane or Cloud.
	Aliases []AliasRoute
	// CloudAddr is the hosted fallback as host:port; "" answers 503.
	CloudAddr string
	// FallbackDepth is how many fallbacks per alias the rules try; 0:
	// the longest list of Aliases, MinFallbackDepth at least.
	FallbackDepth int
}

// LaneBackend is one lane's backend and where it runs now (Addr "" for
// nowhere yet), or, with Slots, each of its servers as the gateway has
// them (what the haproxy plugin writes, so that a restart or reload finds
// every address: HAProxy's server state file restores a server's state
// and port but not an address set at runtime).
type LaneBackend struct {
	Lane  string
	Addr  string
	Port  int
	Slots []Slot
}

// Slot is one server of a lane backend: its address ("" for none yet)
// and whether it takes requests (else it starts in maintenance).
type Slot struct {
	Addr  string
	Port  int
	Ready bool
}

// AliasRoute is where an alias points, and the lanes (Cloud included)
// that serve it, in order, while its lane has no healthy server.
type AliasRoute struct {
	Alias     string
	Lane      string
	Fallbacks []string
}

// FallbackMapFile is the map beside mapFile that gives each alias its
// fallback backends, in order, joined by '+'.
func FallbackMapFile(mapFile string) string { return mapFile + ".fallbacks" }

// Health checks: every lane server is asked GET /health each
// CheckInterval and is down after CheckFall failures in a row (a lane
// that stopped answering is skipped within about CheckFall intervals),
// up again after one success.
const (
	// CheckInterval is the time between two health checks of a lane
	// server, in HAProxy's duration syntax.
	CheckInterval = "1s"
	// CheckFall is how many failed health checks in a row mark a lane
	// server down.
	CheckFall = 2
)

// Cloud is the lane name, and the backend, of the hosted fallback.
const Cloud = "cloud"

// ServerSlots is how many servers a lane backend has: one per place the
// lane runs while it moves (the old and the new), so a move never touches
// the server still finishing its streams.
const ServerSlots = 2

var (
	pathRE = regexp.MustCompile(`^/[A-Za-z0-9._/@+-]*$`)
	// cloudHost is the host of the cloud fallback's address.
	cloudHost = spelling.New("A-Za-z0-9.-", "A-Za-z0-9.-", 1, 253)
)

// LaneBackendName is the backend of a lane.
func LaneBackendName(lane string) string {
	if lane == Cloud {
		return Cloud
	}
	return "lane_" + lane
}

// laneOfBackend inverts LaneBackendName, "" for a backend that is no lane's.
func laneOfBackend(be string) string {
	if be == Cloud {
		return Cloud
	}
	l, ok := strings.CutPrefix(be, "lane_")
	if !ok || !spelling.Name.Allows(l) {
		return ""
	}
	return l
}

func (s Spec) check() error {
	if _, err := netip.ParseAddrPort(s.Bind); err != nil {
		return fmt.Errorf("bind %q: want IP:PORT", s.Bind)
	}
	for what, p := range map[string]string{"map file": s.MapFile, "state file": s.StateFile} {
		if !pathRE.MatchString(p) {
			return fmt.Errorf("%s %q: want an absolute path of letters, digits and ._/@+-", what, p)
		}
	}
	if sock, ok := strings.CutPrefix(s.AdminSocket, "ipv4@"); ok {
		if _, err := netip.ParseAddrPort(sock); err != nil {
			return fmt.Errorf("admin socket %q: want ipv4@IP:PORT", s.AdminSocket)
		}
	} else if !pathRE.MatchString(s.AdminSocket) {
		return fmt.Errorf("admin socket %q: want an absolute path or ipv4@IP:PORT", s.AdminSocket)
	}
	lanes := map[string]bool{Cloud: true}
	for _, l := range s.Lanes {
		if !spelling.Name.Allows(l.Lane) || l.Lane == Cloud {
			return fmt.Errorf("lane %q: not a lane name", l.Lane)
		}
		if l.Addr != "" {
			if err := checkEndpoint(l.Addr, l.Port); err != nil {
				return fmt.Errorf("lane %s: %v", l.Lane, err)
			}
		}
		for _, sl := range l.Slots {
			if sl.Addr != "" {
				if err := checkEndpoint(sl.Addr, sl.Port); err != nil {
					return fmt.Errorf("lane %s: %v", l.Lane, err)
				}
			}
		}
		if len(l.Slots) > ServerSlots {
			return fmt.Errorf("lane %s: %d servers, more than %d", l.Lane, len(l.Slots), ServerSlots)
		}
		lanes[l.Lane] = true
	}
	for _, a := range s.Aliases {
		if !spelling.Alias.Allows(a.Alias) {
			return fmt.Errorf("alias %q: not an alias name", a.Alias)
		}
		if !lanes[a.Lane] {
			return fmt.Errorf("alias %s: lane %q has no backend", a.Alias, a.Lane)
		}
		for _, f := range a.Fallbacks {
			if !lanes[f] {
				return fmt.Errorf("alias %s: fallback %q has no backend", a.Alias, f)
			}
		}
	}
	if s.CloudAddr != "" {
		h, p, ok := strings.Cut(s.CloudAddr, ":")
		port, err := strconv.Atoi(p)
		if !ok || !cloudHost.Allows(h) || err != nil || port < 1 || port > 65535 {
			return fmt.Errorf("cloud address %q: want host:port", s.CloudAddr)
		}
	}
	return nil
}

// checkEndpoint refuses an address HAProxy's `set server addr` would not
// take: it must be an IP address.
func checkEndpoint(addr string, port int) error {
	if _, err := netip.ParseAddr(addr); err != nil {
		return fmt.Errorf("address %q is not an IP address", addr)
	}
	if port < 1 || port > 65535 {
		return fmt.Errorf("port %d is not in 1..65535", port)
	}
	return nil
}

// Config returns the HAProxy configuration serving spec, and the map file
// to write beside it (FallbackMap gives the other). Requests are routed on
// the JSON body's "model" (the body is buffered first) through the map;
// an alias the map does not know goes to the cloud backend. While the
// backend an alias is sent to has no usable server (every one down by its
// health check, GET /health, or in maintenance), its fallbacks are tried
// in order, from the fallback map: a dead lane's alias is served by its
// fallback within about CheckFall check intervals, without any change
// from poolc. Lane backends close the server connection after each
// response (llama-server closes it after a streamed answer anyway, so a
// reused connection would find it dead), retry a request whose connection
// failed before anything was sent, and stream without a server timeout
// short enough to cut a long answer.
func Config(spec Spec) (cfg, mapFile string, err error) {
	if err := spec.check(); err != nil {
		return "", "", err
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# Generated by poolc: the gateway of the pool's aliases. poolc changes")
	p("# routes at runtime through the admin socket and keeps them in the map,")
	p("# server state and (with the haproxy plugin's config_file) this file,")
	p("# so a restart or reload serves the routes of the last apply.")
	p("global")
	p("    stats socket %s mode 600 level admin expose-fd listeners", spec.AdminSocket)
	p("    server-state-file %s", spec.StateFile)
	p("")
	p("defaults")
	p("    mode http")
	p("    load-server-state-from-file global")
	p("    timeout connect 5s")
	p("    timeout client 10m")
	p("    timeout server 10m")
	p("    timeout http-request 30s")
	p("    retries 2")
	p("    retry-on conn-failure empty-response")
	p("")
	p("frontend llm")
	p("    bind %s", spec.Bind)
	p("    option http-buffer-request")
	p("    http-request set-var(txn.model) req.body,json_query('$.model')")
	p("    http-request set-var(txn.backend) var(txn.model),map(%s,%s)", spec.MapFile, Cloud)
	lanes := append([]LaneBackend(nil), spec.Lanes...)
	sort.Slice(lanes, func(i, j int) bool { return lanes[i].Lane < lanes[j].Lane })
	if depth := fallbackDepth(spec); depth > 0 && len(lanes) > 0 {
		// A worker told to stop by a reload counts no usable server in any
		// backend (nbsrv 0) while it finishes the requests it still takes
		// on kept connections: those go to the alias's own lane, not to a
		// fallback (which, served by a router, does not know the alias).
		p("    # While the chosen backend has no usable server, the alias's next fallback")
		p("    # (not in a worker stopping after a reload, where every backend counts none).")
		p("    http-request set-var(txn.fallbacks) var(txn.model),map(%s,)", FallbackMapFile(spec.MapFile))
		for k := 1; k <= depth; k++ {
			for _, l := range lanes {
				be := LaneBackendName(l.Lane)
				p("    http-request set-var(txn.backend) var(txn.fallbacks),field(%d,+) if { var(txn.backend) -m str %s } { nbsrv(%s) eq 0 } !{ stopping } { var(txn.fallbacks),field(%d,+),length gt 0 }", k, be, be, k)
			}
		}
	}
	p("    use_backend %%[var(txn.backend)]")
	p("    default_backend %s", Cloud)
	for _, l := range lanes {
		p("")
		p("backend %s", LaneBackendName(l.Lane))
		p("    option http-server-close")
		p("    option httpchk GET /health")
		p("    default-server check inter %s fall %d rise 1", CheckInterval, CheckFall)
		slots := l.Slots
		if slots == nil && l.Addr != "" {
			slots = []Slot{{Addr: l.Addr, Port: l.Port, Ready: true}}
		}
		for i := 1; i <= ServerSlots; i++ {
			var sl Slot
			if i <= len(slots) {
				sl = slots[i-1]
			}
			switch {
			case sl.Addr != "" && sl.Ready:
				p("    server s%d %s", i, joinHostPort(sl.Addr, sl.Port))
			case sl.Addr != "":
				p("    server s%d %s disabled", i, joinHostPort(sl.Addr, sl.Port))
			default:
				// A free slot: maintenance until a route gives it an address.
				p("    server s%d 127.0.0.1:1 disabled", i)
			}
		}
	}
	p("")
	p("backend %s", Cloud)
	if spec.CloudAddr == "" {
		p(`    http-request return status 503 content-type application/json string "{\"error\":{\"code\":503,\"message\":\"no lane serves this model\"}}"`)
	} else {
		// init-addr lets HAProxy start while the name does not resolve.
		p("    server cloud %s ssl verify required ca-file %s sni str(%s) init-addr last,libc,none", spec.CloudAddr, SystemCAFile, strings.Split(spec.CloudAddr, ":")[0])
	}
	routes := map[string]string{}
	for _, a := range spec.Aliases {
		routes[a.Alias] = LaneBackendName(a.Lane)
	}
	return b.String(), formatMap(routes), nil
}

// MinFallbackDepth is how many fallbacks per alias the configuration's
// rules try at least: fallback lists up to this long change at runtime
// (the fallback map) without a reload.
const MinFallbackDepth = 3

// fallbackDepth is how many fallbacks the rules try: the longest list of
// spec's aliases, MinFallbackDepth at least.
func fallbackDepth(spec Spec) int {
	if spec.FallbackDepth > 0 {
		return spec.FallbackDepth
	}
	n := MinFallbackDepth
	for _, a := range spec.Aliases {
		n = max(n, len(a.Fallbacks))
	}
	return n
}

// FallbackMap is the fallback map file of spec: each alias with
// fallbacks to their backends, in order, joined by '+'.
func FallbackMap(spec Spec) string {
	return formatMap(fallbackRoutes(spec.Aliases))
}

func fallbackRoutes(aliases []AliasRoute) map[string]string {
	m := map[string]string{}
	for _, a := range aliases {
		if len(a.Fallbacks) == 0 {
			continue
		}
		bes := make([]string, len(a.Fallbacks))
		for i, f := range a.Fallbacks {
			bes[i] = LaneBackendName(f)
		}
		m[a.Alias] = strings.Join(bes, "+")
	}
	return m
}

func joinHostPort(h string, port int) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]:" + strconv.Itoa(port)
	}
	return h + ":" + strconv.Itoa(port)
}

// formatMap writes a map file: "KEY VALUE" lines, sorted.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + " " + m[k] + "\n")
	}
	return b.String()
}

// SystemCAFile is the CA bundle the cloud backend verifies against, where
// Debian and Ubuntu keep it.
const SystemCAFile = "/etc/ssl/certs/ca-certificates.crt"
