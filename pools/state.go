package pools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// StateFormatVersion is the version of the state document this poolc
// reads and writes. A newer document is refused rather than misread.
const StateFormatVersion = 1

// State is the current state of a pool as poolc last saw it: the fleet,
// plus the lineage (a random ID fixed when the state is first created) and
// the serial (incremented on every write). A saved plan records both, so a
// plan made against another state is refused.
type State struct {
	FormatVersion int    `json:"format_version"`
	Lineage       string `json:"lineage"`
	Serial        int64  `json:"serial"`
	Pool          string `json:"pool"`
	Fleet
	// Served records the plugin serving each target (see RecordServed);
	// a state written before poolc kept it has none.
	Served []Served `json:"served,omitempty"`
}

// Fleet is what runs: the desired state (from placement) and the current
// state (from the state store and the actuators' observations) have this
// one shape, and the planner diffs two of them. Every list is sorted by
// its key, so equal fleets marshal to equal bytes.
type Fleet struct {
	Nodes      []NodeState   `json:"nodes"`
	Lanes      []LaneState   `json:"lanes"`
	Routes     []Route       `json:"routes"`
	Prefetched []Prefetch    `json:"prefetched"`
	Members    []MemberState `json:"members"`
	// Images is what the image-sync plugins saw at the last refresh: the
	// pool's image as each member's registry holds or lacks it. It is an
	// observation for the plan at hand and never stored (a stored count
	// of bytes would be stale by the next plan).
	Images []MemberImage `json:"-"`
	// Unobserved lists the targets the last refresh could not observe;
	// like Images, an observation for the plan at hand, never stored.
	Unobserved []Unobserved `json:"-"`
}

// MemberImage is a pod pool's image (Image, as the config gives it) as
// seen from the registry of member Context of PodPool: Digest is what Image resolves to
// at its source (empty when unknown), MissingBytes what a sync would send
// there (0 when the registry serves it).
type MemberImage struct {
	PodPool      string
	Context      string
	Image        string
	Digest       string
	MissingBytes int64
}

// Key identifies the member, as MemberState.Key does.
func (m MemberImage) Key() string { return MemberState{PodPool: m.PodPool, Context: m.Context}.Key() }

// MemberImage returns what the last refresh saw of image at the member
// with key, or nil.
func (f *Fleet) MemberImage(key, image string) *MemberImage {
	for i := range f.Images {
		if f.Images[i].Key() == key && f.Images[i].Image == image {
			return &f.Images[i]
		}
	}
	return nil
}

// NodeState is a node as last observed. Down nodes hold no lanes that
// count: the placer skips them.
type NodeState struct {
	Name string `json:"name"`
	Down bool   `json:"down,omitempty"`
	// Cordon is what the node's operator asked of its scheduling through
	// the membership (poolc node cordon|drain); "" means nothing.
	Cordon Cordon `json:"cordon,omitempty"`
}

// Cordon is how a node is kept from taking lanes.
type Cordon string

// The cordons: a cordoned node takes no lane that is not running there
// already; a drained node takes none, so its lanes move off.
const (
	// Cordoned keeps a node from taking a lane not running there already.
	Cordoned Cordon = "cordoned"
	// Drained keeps a node from taking any lane, so its lanes move off.
	Drained Cordon = "drained"
)

// LaneState is one lane process on one node, identified by its lane,
// node and port. A lane has one process in a desired fleet; while it
// moves, the current fleet holds two, one per node, and while it is
// replaced on its node (new weights under the same lane name), two on
// that node, on different ports. Loaded says whether the model is in
// memory; keep-warm and preferred lanes are loaded, an on-demand lane is
// registered on its node and loads on first request.
type LaneState struct {
	Name      string    `json:"name"`
	Node      string    `json:"node"`
	Model     string    `json:"model"`
	Port      int       `json:"port"`
	Residency Residency `json:"residency"`
	// Path is the weights file the process loads; a new file (an
	// upgrade under the same model name) is a new process.
	Path string `json:"path,omitempty"`
	// SHA256 and Source are the digest of the weights the process loads
	// and where they were copied from, as the model declared them when
	// the process started; "" when unknown (a state written before
	// poolc recorded them, or a model that declares none).
	SHA256 string   `json:"sha256,omitempty"`
	Source string   `json:"source,omitempty"`
	Args   []string `json:"args,omitempty"`
	// Aliases are the names an on-demand lane's section of its node's
	// router answers to, sorted (the router answers to no other: a
	// changed set is a new section); none for a lane with a process of
	// its own, which answers to any name.
	Aliases  []string `json:"aliases,omitempty"`
	MemoryGB float64  `json:"memory_gb"`
	Loaded   bool     `json:"loaded"`
	// Observed is what the last refresh read of the process on its node
	// (nil when its actuator reports nothing): shown by state show, never
	// planned from (Args and Path are what the plan compares).
	Observed *ObservedProcess `json:"observed,omitempty"`
}

// SameProcesses reports whether two fleets record the same observed
// processes (pid and command line) for their lanes; resident memory,
// which moves all the time, is left out, so that a refresh records a
// process the first time it is read and again when it changes.
func SameProcesses(a, b Fleet) bool {
	key := func(l LaneState) string {
		if l.Observed == nil {
			return ""
		}
		return fmt.Sprintf("%s@%s:%d pid=%d %q", l.Name, l.Node, l.Port, l.Observed.PID, l.Observed.CommandLine)
	}
	return slices.EqualFunc(a.Lanes, b.Lanes, func(x, y LaneState) bool { return key(x) == key(y) })
}

// ObservedProcess is a lane's process as its actuator read it on the
// node: its pid, its own command line and its resident memory in bytes
// (0 when unknown).
type ObservedProcess struct {
	PID           int      `json:"pid"`
	CommandLine   []string `json:"command_line,omitempty"`
	ResidentBytes int64    `json:"resident_bytes,omitempty"`
}

// Reserved is the memory, in GB, the lane holds that admission cannot
// evict: a loaded keep-warm or preferred lane's memory, else 0.
func (l LaneState) Reserved() float64 {
	if l.Loaded && l.Residency != OnDemand {
		return l.MemoryGB
	}
	return 0
}

// Route sends an alias to a lane on a node, or to the hosted fallback
// (Lane "cloud", no node). Port says which of the lane's processes on the
// node serves it; 0 (a state written before routes recorded it) means
// the lane's process on the node, whichever port it listens on. Router
// says the alias reaches the lane as a model of its node's router (an
// on-demand lane), not as a process of its own: while the lane's
// residency crosses on-demand both serve it under one node and port, and
// the route names the one it reaches.
type Route struct {
	Alias  string `json:"alias"`
	Lane   string `json:"lane"`
	Node   string `json:"node,omitempty"`
	Port   int    `json:"port,omitempty"`
	Router bool   `json:"router,omitempty"`
}

// laneServerMark begins the key of a lane server route: no alias does.
const laneServerMark = "~"

// LaneServer is the route key of lane's server at the gateway when an
// alias falls back to the lane but none routes to it: the gateway must
// know where the lane runs all the same (and move its server when the
// lane moves), so the fleet routes it under this key, which names no
// alias (aliases begin with a letter or digit) and which the gateway keeps
// out of its alias map.
func LaneServer(lane string) string { return laneServerMark + lane }

// LaneServerOf is the lane whose server route key is alias, and whether
// alias is such a key (see LaneServer).
func LaneServerOf(alias string) (string, bool) { return strings.CutPrefix(alias, laneServerMark) }

// SortedAliases is a lane's aliases as LaneState.Aliases holds them: a
// sorted set, in a slice of its own (nil when there are none).
func SortedAliases(aliases []string) []string {
	if len(aliases) == 0 {
		return nil
	}
	out := slices.Clone(aliases)
	slices.Sort(out)
	return slices.Compact(out)
}

// Reaches reports whether the route sends its alias to process l: its
// lane, on its node and port (any, when the route names none), as its
// own process or through the router as the route says.
func (r Route) Reaches(l LaneState) bool {
	return r.Lane == l.Name && r.Node == l.Node && (r.Port == 0 || r.Port == l.Port) && r.Router == (l.Residency == OnDemand)
}

// Prefetch records that a model's weights file is on a node. A file is
// identified by node, model and path; SHA256 is the digest of what the
// file holds ("" when unknown).
type Prefetch struct {
	Node   string  `json:"node"`
	Model  string  `json:"model"`
	Path   string  `json:"path,omitempty"`
	SHA256 string  `json:"sha256,omitempty"`
	SizeGB float64 `json:"size_gb"`
}

// MemberState is one cluster of a pod pool as set up: its capacity and
// registry, and the image its registry holds.
type MemberState struct {
	PodPool  string `json:"pod_pool"`
	Context  string `json:"context"`
	Priority int    `json:"priority"`
	SSHHost  string `json:"ssh_host,omitempty"`
	SSHPort  int    `json:"ssh_port,omitempty"`
	Capacity int    `json:"capacity"`
	Registry string `json:"registry,omitempty"`
	Image    string `json:"image,omitempty"`
	// PodMemoryGB is the memory limit each pod gets on the member (its
	// LimitRange), 0 for none.
	PodMemoryGB float64 `json:"pod_memory_gb,omitempty"`
}

// Key identifies the member across pod pools.
func (m MemberState) Key() string { return m.PodPool + "/" + m.Context }

// Lane returns a process of the named lane on the node (the one on the
// lowest port when it runs two, while it is replaced), or nil.
func (f *Fleet) Lane(name, node string) *LaneState {
	i := f.laneIndex(name, node, 0)
	if i < len(f.Lanes) && f.Lanes[i].Name == name && f.Lanes[i].Node == node {
		return &f.Lanes[i]
	}
	return nil
}

// Process returns the process of the named lane on the node and port, or
// nil; port 0 means any port, as Lane.
func (f *Fleet) Process(name, node string, port int) *LaneState {
	i := f.laneIndex(name, node, port)
	if i < len(f.Lanes) && f.Lanes[i].Name == name && f.Lanes[i].Node == node && (port == 0 || f.Lanes[i].Port == port) {
		return &f.Lanes[i]
	}
	return nil
}

// Serves returns the process a route sends its alias to (the one on the
// lowest port when the route names none), or nil (for the cloud fallback,
// or a route to a process the fleet does not hold).
func (f *Fleet) Serves(r Route) *LaneState {
	if r.Lane == Cloud || r.Lane == "" {
		return nil
	}
	in := f.Instances(r.Lane)
	if i := slices.IndexFunc(in, r.Reaches); i >= 0 {
		return &in[i]
	}
	return nil
}

// Instances returns the processes of the named lane, on any node.
func (f *Fleet) Instances(name string) []LaneState {
	i := f.laneIndex(name, "", 0)
	j := i
	for j < len(f.Lanes) && f.Lanes[j].Name == name {
		j++
	}
	return f.Lanes[i:j]
}

func (f *Fleet) laneIndex(name, node string, port int) int {
	return sort.Search(len(f.Lanes), func(i int) bool {
		return compareLane(f.Lanes[i], name, node, port) >= 0
	})
}

// compareProcess orders lane processes by lane, node and port, then a
// lane's own process before the same lane served by its node's router
// (on-demand): while a lane's residency crosses on-demand, both run at
// once under the lane's port.
func compareProcess(a, b LaneState) int {
	if c := compareLane(a, b.Name, b.Node, b.Port); c != 0 {
		return c
	}
	switch ao, bo := a.Residency == OnDemand, b.Residency == OnDemand; {
	case ao == bo:
		return 0
	case bo:
		return -1
	}
	return 1
}

// ProcessAs returns the process l names: its lane, node and port, as its
// own process or served by the router as l's residency says; or nil.
func (f *Fleet) ProcessAs(l LaneState) *LaneState {
	if i, found := slices.BinarySearchFunc(f.Lanes, l, compareProcess); found {
		return &f.Lanes[i]
	}
	return nil
}

// compareLane orders lane processes by lane, node and port.
func compareLane(l LaneState, name, node string, port int) int {
	if c := strings.Compare(l.Name, name); c != 0 {
		return c
	}
	if c := strings.Compare(l.Node, node); c != 0 {
		return c
	}
	return l.Port - port
}

// Route returns the route of an alias, or nil.
func (f *Fleet) Route(alias string) *Route {
	i := sort.Search(len(f.Routes), func(i int) bool { return f.Routes[i].Alias >= alias })
	if i < len(f.Routes) && f.Routes[i].Alias == alias {
		return &f.Routes[i]
	}
	return nil
}

// IsDown reports whether the state knows the node to be down.
func (f *Fleet) IsDown(node string) bool {
	for _, n := range f.Nodes {
		if n.Name == node {
			return n.Down
		}
	}
	return false
}

// DownNodes returns the nodes the state knows to be down, as a set, for
// a caller that asks of many nodes (IsDown scans the nodes each time).
func (f *Fleet) DownNodes() map[string]bool {
	down := map[string]bool{}
	for _, n := range f.Nodes {
		if n.Down {
			down[n.Name] = true
		}
	}
	return down
}

// HasPrefetched reports whether the weights file p names (node, model and
// path) is on its node with p's content: the same SHA256 when both are
// known. The fleet must be normalized.
func (f *Fleet) HasPrefetched(p Prefetch) bool {
	i, found := slices.BinarySearchFunc(f.Prefetched, p, ComparePrefetch)
	return found && (p.SHA256 == "" || f.Prefetched[i].SHA256 == "" || f.Prefetched[i].SHA256 == p.SHA256)
}

// Normalize sorts every list by its key and turns nil lists into empty
// ones, so equal fleets compare and marshal equal.
func (f *Fleet) Normalize() {
	sort.Slice(f.Nodes, func(i, j int) bool { return f.Nodes[i].Name < f.Nodes[j].Name })
	// A fleet is most often normalized already (read from a state, cloned):
	// checking the order costs one comparison per lane, sorting n·log n.
	if !slices.IsSortedFunc(f.Lanes, compareProcess) {
		slices.SortStableFunc(f.Lanes, compareProcess)
	}
	sort.Slice(f.Routes, func(i, j int) bool { return f.Routes[i].Alias < f.Routes[j].Alias })
	if !slices.IsSortedFunc(f.Prefetched, ComparePrefetch) {
		slices.SortFunc(f.Prefetched, ComparePrefetch)
	}
	sort.Slice(f.Members, func(i, j int) bool { return f.Members[i].Key() < f.Members[j].Key() })
	if f.Nodes == nil {
		f.Nodes = []NodeState{}
	}
	if f.Lanes == nil {
		f.Lanes = []LaneState{}
	}
	if f.Routes == nil {
		f.Routes = []Route{}
	}
	if f.Prefetched == nil {
		f.Prefetched = []Prefetch{}
	}
	if f.Members == nil {
		f.Members = []MemberState{}
	}
}

// ParseState reads a state document. It refuses documents of a newer
// format version, and reports a syntax error with its line and column.
func ParseState(name string, data []byte) (*State, error) {
	s, ok := decodeState(data)
	if !ok {
		return nil, stateError(name, data)
	}
	s.Fleet.markRouterRoutes()
	if err := s.Fleet.check(false); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s.Normalize()
	return s, nil
}

// decodeState decodes a well-formed state document of a format version
// this poolc reads, in one pass; for anything else it reports false and
// stateError says what is wrong.
func decodeState(data []byte) (*State, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s State
	if dec.Decode(&s) != nil || s.FormatVersion < 1 || s.FormatVersion > StateFormatVersion {
		return nil, false
	}
	rest := data[dec.InputOffset():]
	return &s, len(bytes.TrimLeft(rest, " \t\r\n")) == 0
}

// stateError says why a document is not a state this poolc reads: a
// format version it does not read (newer, missing or not valid), checked
// first, else where its JSON is wrong.
func stateError(name string, data []byte) error {
	var probe struct {
		FormatVersion *int `json:"format_version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return JSONError(name, data, err)
	}
	switch {
	case probe.FormatVersion == nil:
		return fmt.Errorf("%s: not a poolc state file: it has no format_version", name)
	case *probe.FormatVersion > StateFormatVersion:
		return fmt.Errorf("%s: state format_version %d is newer than this poolc reads (%d): upgrade poolc", name, *probe.FormatVersion, StateFormatVersion)
	case *probe.FormatVersion < 1:
		return fmt.Errorf("%s: state format_version %d is not valid", name, *probe.FormatVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s State
	if err := dec.Decode(&s); err != nil {
		return JSONError(name, data, err)
	}
	return fmt.Errorf("%s: not a state document", name)
}

// markRouterRoutes reads a route that says nothing of the router (a state
// written before routes did) as reaching the lane through its node's
// router when the lane runs there only as a model of the router.
func (s *Fleet) markRouterRoutes() {
	procs := s.processesOf()
	for i := range s.Routes {
		r := &s.Routes[i]
		if r.Router || r.Lane == Cloud {
			continue
		}
		routed := *r
		routed.Router = true
		if !procs.reach(*r) && procs.reach(routed) {
			r.Router = true
		}
	}
}

// laneOnNode names the processes of one lane on one node.
type laneOnNode struct{ lane, node string }

// processIndex holds a fleet's processes by lane and node, so that a route
// finds what it reaches without a scan of every process.
type processIndex map[laneOnNode][]LaneState

// processesOf indexes the fleet's processes by lane and node.
func (s *Fleet) processesOf() processIndex {
	idx := make(processIndex, len(s.Lanes))
	for _, l := range s.Lanes {
		k := laneOnNode{l.Name, l.Node}
		idx[k] = append(idx[k], l)
	}
	return idx
}

// reach reports whether a process of the index is the one r reaches.
func (idx processIndex) reach(r Route) bool {
	return slices.ContainsFunc(idx[laneOnNode{r.Lane, r.Node}], r.Reaches)
}

// check refuses fleets no poolc would write: duplicate keys, lanes
// without a node, and, with reached, routes to processes the fleet does
// not hold. A lane may run twice under one node and port: as its own
// process and as a model of the node's router, while its residency
// crosses on-demand. A fleet as observed may route an alias to a process
// it does not hold (the gateway still sends it to a lane whose process
// died): that is what runs, and the plan starts the lane or routes the
// alias again; the fleet a plan leads to may not.
func (s *Fleet) check(reached bool) error {
	type process struct {
		name, node string
		port       int
		router     bool
	}
	procs := map[process]bool{}
	for _, l := range s.Lanes {
		if l.Name == "" || l.Node == "" {
			return fmt.Errorf("lane %q has no name or node", l.Name)
		}
		key := process{l.Name, l.Node, l.Port, l.Residency == OnDemand}
		if procs[key] {
			how := "as a process of its own"
			if key.router {
				how = "as a model of the router"
			}
			return fmt.Errorf("lane %q appears twice on node %q port %d %s", l.Name, l.Node, l.Port, how)
		}
		procs[key] = true
	}
	aliases := map[string]bool{}
	index := s.processesOf()
	for _, r := range s.Routes {
		if aliases[r.Alias] {
			return fmt.Errorf("alias %q is routed twice", r.Alias)
		}
		aliases[r.Alias] = true
		if reached && r.Lane != Cloud && !index.reach(r) {
			return fmt.Errorf("alias %q routes to lane %q on node %q%s, which the state does not hold", r.Alias, r.Lane, r.Node, r.via())
		}
	}
	return nil
}

// via is " through its router" for a route that reaches its lane as a
// model of the node's router, else "".
func (r Route) via() string {
	if r.Router {
		return " through its router"
	}
	return ""
}

// JSONError adds to a JSON syntax or type error the line and column, in
// the document named name, where it is.
func JSONError(name string, data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset - 1 // the offset is just past the offending byte
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return fmt.Errorf("%s: %v", name, err)
	}
	line, col := 1, 1
	for _, b := range data[:min(int(off), len(data))] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("%s:%d:%d: %v", name, line, col, err)
}

// Marshal writes the state as indented JSON, for people to read.
func (s *State) Marshal() ([]byte, error) {
	s.FormatVersion = StateFormatVersion
	s.Normalize()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// MarshalCompact writes the state as JSON without indentation, the form
// the file store keeps: it is written often, and indenting a large state
// costs more than writing it.
func (s *State) MarshalCompact() ([]byte, error) {
	s.FormatVersion = StateFormatVersion
	s.Normalize()
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
