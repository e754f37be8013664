package sdk

import "slices"

// The types a plugin sees: steps with the detail of their kind, the
// inventory of its targets, and the fleet it observes. They are the SDK's
// own, mirrored one to one by the protocol's messages (plugins/proto), so
// a change inside poolc never changes what a plugin receives. Their JSON
// form (the field tags, snake_case, empty fields left out) is a public
// format too: the webhook example posts steps in it, and docs/PLUGINS.md
// describes it. poolc
// converts its plans and state to and from them in one place
// (plugins/convert).

// StepKind is the action a step takes.
type StepKind string

// The step kinds, grouped by the target whose plugin carries them out.
const (
	// KindPrefetch, a node's runtime plugin's, copies Step.Prefetch's
	// model to its node.
	KindPrefetch StepKind = "prefetch"
	// KindStart, a node's runtime plugin's, starts Step.Lane.
	KindStart StepKind = "start"
	// KindResidency, a node's runtime plugin's, changes Step.Lane's
	// residency in place from Step.From.
	KindResidency StepKind = "residency"
	// KindDrain, a node's runtime plugin's, stops Step.Lane taking new
	// requests and waits for those in flight.
	KindDrain StepKind = "drain"
	// KindStop, a node's runtime plugin's, stops Step.Lane.
	KindStop StepKind = "stop"
	// KindRoute, the gateway plugin's, points Step.Route's alias
	// elsewhere.
	KindRoute StepKind = "route"
	// KindMemberEnsure, a pod pool's cluster plugin's, creates or updates
	// Step.Member's namespace, quota, limit range and registry wiring.
	KindMemberEnsure StepKind = "member-ensure"
	// KindMemberRemove, a pod pool's cluster plugin's, tears down what
	// KindMemberEnsure set up for Step.Member.
	KindMemberRemove StepKind = "member-remove"
	// KindImageSync, a pod pool's image-sync plugin's, copies
	// Step.ImageSync's image to its member's registry.
	KindImageSync StepKind = "image-sync"
)

// The kinds a plugin must declare to serve each kind of target.
var (
	// RuntimeKinds are the kinds a plugin must declare to serve a node.
	RuntimeKinds = []StepKind{KindPrefetch, KindStart, KindResidency, KindDrain, KindStop}
	// GatewayKinds are the kinds a plugin must declare to serve the
	// gateway.
	GatewayKinds = []StepKind{KindRoute}
	// ClusterKinds are the kinds a plugin must declare to serve a pod
	// pool's members.
	ClusterKinds = []StepKind{KindMemberEnsure, KindMemberRemove}
	// ImageSyncKinds are the kinds a plugin must declare to serve a pod
	// pool's image sync.
	ImageSyncKinds = []StepKind{KindImageSync}
)

// AllStepKinds returns every step kind, in the order a plan summary lists
// them: what a plugin declares when it can serve any target.
func AllStepKinds() []StepKind {
	return []StepKind{KindPrefetch, KindStart, KindResidency, KindRoute, KindDrain, KindStop, KindMemberEnsure, KindImageSync, KindMemberRemove}
}

// Step is one action of a plan. Exactly the detail field its Kind needs
// is set: Lane (start, residency, drain, stop), Route, Prefetch, Member
// (member-ensure, member-remove) or ImageSync.
type Step struct {
	// ID is unique in the plan and stable for the same inputs.
	ID string `json:"id"`
	// Kind is the action.
	Kind StepKind `json:"kind"`
	// Target names what the step changes: a lane, an alias, a member.
	Target string `json:"target,omitempty"`
	// Reason says why poolc plans the step, for logs.
	Reason string `json:"reason,omitempty"`

	Lane      *Lane        `json:"lane,omitempty"`
	From      string       `json:"from,omitempty"` // residency before a residency step, or a start across on-demand
	Route     *RouteChange `json:"route,omitempty"`
	Prefetch  *Prefetch    `json:"prefetch,omitempty"`
	Member    *Member      `json:"member,omitempty"`
	ImageSync *ImageSync   `json:"image_sync,omitempty"`
}

// Node is a machine and how to reach it. Address has no port; SSHPort is
// the SSH port and SSHUser the login (empty: the plugin's default).
type Node struct {
	Name        string            `json:"name"`
	Address     string            `json:"address,omitempty"`
	SSHUser     string            `json:"ssh_user,omitempty"`
	SSHPort     int               `json:"ssh_port,omitempty"`
	KubeContext string            `json:"kube_context,omitempty"`
	MemoryGB    float64           `json:"memory_gb,omitempty"`
	BudgetGB    float64           `json:"budget_gb,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
}

// Model is a weights file: where it lives on a node (Path), where prefetch
// copies it from (Source), its digest when the pool gives one, its size on
// disk, its memory when loaded, and extra llama-server arguments.
type Model struct {
	Name     string   `json:"name"`
	Path     string   `json:"path,omitempty"`
	Source   string   `json:"source,omitempty"`
	SHA256   string   `json:"sha256,omitempty"`
	SizeGB   float64  `json:"size_gb,omitempty"`
	MemoryGB float64  `json:"memory_gb,omitempty"`
	Args     []string `json:"args,omitempty"`
}

// Residency values, as Lane.Residency and Step.From hold them.
const (
	// KeepWarm is the residency of a lane always loaded and never
	// evicted.
	KeepWarm = "keep-warm"
	// Preferred is the residency of a lane restored when idle room exists
	// and evicted before keep-warm ones.
	Preferred = "preferred"
	// OnDemand is the residency of a lane loaded on its first request and
	// evicted least recently used first.
	OnDemand = "on-demand"
)

// Lane is one lane process on one node: in a step, the lane as the step
// leaves it (for drain and stop, as it is); in a fleet, as observed.
// Loaded says whether the model is in memory. A process is identified by
// its lane's name, its node and its Port: a lane whose weights, args or
// port change under the same name is replaced make-before-break on its
// node, so for a while the node runs two processes of it, on different
// ports and from different weights files (Model.Path, Model.SHA256); a
// runtime plugin keys what it keeps per process (pidfile, unit) by name
// and port, and its drain and stop act on the process of Port only.
type Lane struct {
	Name      string   `json:"name"`
	Node      Node     `json:"node"`
	Model     Model    `json:"model"`
	Port      int      `json:"port,omitempty"`
	Aliases   []string `json:"aliases,omitempty"`
	Residency string   `json:"residency,omitempty"`
	Loaded    bool     `json:"loaded,omitempty"`
	// Process is what Observe read of the process running the lane on
	// its node; nil elsewhere.
	Process *LaneProcess `json:"process,omitempty"`
}

// LaneProcess is a lane's process as observed on its node, never copied
// from the pool: its pid, its own command line (for a model of a router:
// the one the router started it with) and its resident memory in bytes
// (0 when unknown).
type LaneProcess struct {
	PID           int      `json:"pid"`
	CommandLine   []string `json:"command_line,omitempty"`
	ResidentBytes int64    `json:"resident_bytes,omitempty"`
}

// LaneSpec is a lane as the pool declares it, for an inventory.
type LaneSpec struct {
	Name      string   `json:"name"`
	Model     string   `json:"model,omitempty"`
	Port      int      `json:"port,omitempty"`
	Aliases   []string `json:"aliases,omitempty"`
	Residency string   `json:"residency,omitempty"`
}

// AliasSpec is an alias and its fallbacks, for a gateway's inventory.
type AliasSpec struct {
	Name      string   `json:"name"`
	Lane      string   `json:"lane,omitempty"`
	Fallbacks []string `json:"fallbacks,omitempty"`
}

// Cloud is the lane name of the hosted fallback.
const Cloud = "cloud"

// LaneEndpoint is where a route sends requests: a lane on a node, reached
// at Address:Port, or the hosted fallback (Lane "cloud", the rest empty).
// Router says the lane is reached as a model of its node's router (an
// on-demand lane): the gateway sends it to the router's port, and Port
// stays the lane's, which names the lane's process as poolc does.
type LaneEndpoint struct {
	Lane    string `json:"lane,omitempty"`
	Node    string `json:"node,omitempty"`
	Address string `json:"address,omitempty"`
	Port    int    `json:"port,omitempty"`
	Router  bool   `json:"router,omitempty"`
}

// RouteChange points Alias from where it points now (From, nil when it
// points nowhere) to To (nil removes the alias).
type RouteChange struct {
	Alias string        `json:"alias"`
	From  *LaneEndpoint `json:"from,omitempty"`
	To    *LaneEndpoint `json:"to,omitempty"`
}

// Route is where an alias points, as observed.
type Route struct {
	Alias string       `json:"alias"`
	Lane  LaneEndpoint `json:"lane"`
}

// Prefetch copies Model (source, destination path, sha256, size) to Node.
type Prefetch struct {
	Node  Node  `json:"node"`
	Model Model `json:"model"`
}

// Prefetched is a weights file present on a node, as observed.
type Prefetched struct {
	Node  string `json:"node,omitempty"`
	Model Model  `json:"model"`
}

// Member is one cluster of a pod pool: its kube context, place in the
// pool (Priority 0 first), host, Job capacity, registry (NAME:PORT or
// empty), namespace and pod memory limit (0 for none). Image is the image
// its registry should hold (in steps) or holds (observed: with its
// digest, NAME@sha256:...). SSHPort is SSHHost's SSH port, 0 for the
// default (22).
type Member struct {
	PodPool     string  `json:"pod_pool,omitempty"`
	Context     string  `json:"context,omitempty"`
	Priority    int     `json:"priority,omitempty"`
	SSHHost     string  `json:"ssh_host,omitempty"`
	Capacity    int     `json:"capacity,omitempty"`
	Registry    string  `json:"registry,omitempty"`
	Namespace   string  `json:"namespace,omitempty"`
	PodMemoryGB float64 `json:"pod_memory_gb,omitempty"`
	Image       string  `json:"image,omitempty"`
	SSHPort     int     `json:"ssh_port,omitempty"`
}

// ImageSync copies Image (pinned by Digest when the pool gives one) to
// Member's registry.
type ImageSync struct {
	Member Member `json:"member"`
	Image  string `json:"image,omitempty"`
	Digest string `json:"digest,omitempty"`
}

// NodeStatus is a node as observed, and its memory when known (0
// otherwise). A node the plugin could not reach has no NodeStatus: it is
// in Fleet.Unobserved.
type NodeStatus struct {
	Name          string  `json:"name"`
	MemoryTotalGB float64 `json:"memory_total_gb,omitempty"`
	MemoryFreeGB  float64 `json:"memory_free_gb,omitempty"`
}

// Fleet is what a plugin observes of its targets.
type Fleet struct {
	Nodes      []NodeStatus `json:"nodes,omitempty"`
	Lanes      []Lane       `json:"lanes,omitempty"`
	Routes     []Route      `json:"routes,omitempty"`
	Prefetched []Prefetched `json:"prefetched,omitempty"`
	Members    []Member     `json:"members,omitempty"`
	// Images is, from an image-sync plugin, the pool's image as each
	// member's registry holds or lacks it.
	Images []MemberImage `json:"images,omitempty"`
	// Unobserved lists the plugin's targets it could not observe, with
	// why. Nothing else is reported for them; poolc keeps what its state
	// recorded and plans nothing until they are observed (see
	// Unobserved).
	Unobserved []Unobserved `json:"unobserved,omitempty"`
}

// Unobserved is a target of the plugin's inventory that Observe could not
// observe: a node (Kind TargetNode, Name), the gateway (TargetGateway), a
// pod-pool member or its registry (TargetMember, TargetRegistry: PodPool
// and Context). Cause says why; Detail is what the plugin saw and what to
// do (for a host key: the host, the fingerprint it presents and the
// known_hosts line to fix). Unknown is not absent: a plugin reports an
// unreachable target here, never by leaving its lanes, routes or members
// out of the fleet, which poolc would read as gone.
type Unobserved struct {
	Kind    TargetKind `json:"kind"`
	Name    string     `json:"name,omitempty"`
	PodPool string     `json:"pod_pool,omitempty"`
	Context string     `json:"context,omitempty"`
	Cause   Cause      `json:"cause"`
	Detail  string     `json:"detail,omitempty"`
}

// TargetKind is what kind of target an Unobserved names.
type TargetKind string

// The target kinds.
const (
	// TargetNode names a node, by its name in the pool.
	TargetNode TargetKind = "node"
	// TargetGateway names the gateway.
	TargetGateway TargetKind = "gateway"
	// TargetMember names a pod pool's member cluster.
	TargetMember TargetKind = "member"
	// TargetRegistry names a member's image registry.
	TargetRegistry TargetKind = "registry"
)

// Cause is why a target could not be observed.
type Cause string

// The causes, as docs/PLUGINS.md describes them. CauseOf picks one for an
// error.
const (
	// CauseUnreachable: no route to the host, a name that does not
	// resolve, a connection cut.
	CauseUnreachable Cause = "unreachable"
	// CauseHostKeyUnknown: the host's SSH key is not in known_hosts.
	CauseHostKeyUnknown Cause = "host-key-unknown"
	// CauseHostKeyChanged: the host's SSH key is not the one known_hosts
	// lists for it, or is marked revoked.
	CauseHostKeyChanged Cause = "host-key-changed"
	// CauseTimeout: no answer in time.
	CauseTimeout Cause = "timeout"
	// CauseRefused: the connection or the credentials were refused.
	CauseRefused Cause = "refused"
	// CauseOther: anything else (a command failed, an answer could not
	// be read).
	CauseOther Cause = "other"
)

// Causes lists every cause, in the protocol's order.
func Causes() []Cause {
	return []Cause{CauseOther, CauseUnreachable, CauseHostKeyUnknown, CauseHostKeyChanged, CauseTimeout, CauseRefused}
}

// MemberImage is a pod pool's image (Image, as the inventory's member
// gives it) as seen from the registry of member Context of PodPool:
// Digest is what Image resolves to at its source (empty when unknown)
// and MissingBytes what a sync would send there, the blobs and
// manifests the registry lacks (0 when it serves the image).
type MemberImage struct {
	PodPool      string `json:"pod_pool"`
	Context      string `json:"context"`
	Image        string `json:"image"`
	Digest       string `json:"digest,omitempty"`
	MissingBytes int64  `json:"missing_bytes,omitempty"`
}

// Inventory is the part of the pool a plugin serves: the nodes it runs
// lanes on with the models and lanes they may hold; for the gateway
// (Gateway true) every lane and alias, and every node of the pool in
// GatewayNodes (where lanes run, whoever runs them); the members of the
// pod pools whose cluster or image sync it is. Leaving are the members the
// state holds that the pool no longer lists, of the pod pools whose
// cluster it is: a plugin observes them as it does Members (so poolc plans
// their member-remove steps) but does not set them up.
type Inventory struct {
	Nodes        []Node      `json:"nodes,omitempty"`
	Models       []Model     `json:"models,omitempty"`
	Lanes        []LaneSpec  `json:"lanes,omitempty"`
	Gateway      bool        `json:"gateway,omitempty"`
	Aliases      []AliasSpec `json:"aliases,omitempty"`
	Members      []Member    `json:"members,omitempty"`
	Leaving      []Member    `json:"leaving,omitempty"`
	GatewayNodes []Node      `json:"gateway_nodes,omitempty"`
}

// Node returns the inventory's node of that name, or nil.
func (inv *Inventory) Node(name string) *Node {
	i := slices.IndexFunc(inv.Nodes, func(n Node) bool { return n.Name == name })
	if i < 0 {
		return nil
	}
	return &inv.Nodes[i]
}
