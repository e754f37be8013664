package pools

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Pool is one fleet: machines, the models and lanes they serve, public
// aliases, profiles, pod pools, actuator plugins and the state backend.
// Named elements are sorted by name; lists whose order carries meaning
// (placement candidates, fallbacks, pod-pool members) keep the order written.
type Pool struct {
	Name          string
	Guard         Guard
	Nodes         []Node
	Models        []Model
	Lanes         []Lane
	Aliases       []Alias
	Profiles      []Profile
	ActiveProfile string
	PodPools      []PodPool
	Plugins       []Plugin
	State         StateBackend
	// Gateway names the plugin that carries out the pool's route steps.
	Gateway string
}

// Guard is the memory guard: a load aborts when use would pass Ceiling (a
// fraction of total memory) or free memory would drop under ReserveGB.
type Guard struct {
	Ceiling   float64
	ReserveGB float64
}

// Node is one machine. Guard is the effective guard: the pool's guard with
// the node's overrides applied.
type Node struct {
	Name        string
	Address     string
	MemoryGB    float64
	Labels      map[string]string
	KubeContext string
	Guard       Guard
	// Runtime names the plugin that runs the node's lanes and prefetches.
	Runtime string
	// SSHUser and SSHPort say how a plugin logs in to the node; an empty
	// user leaves the choice to the plugin.
	SSHUser string
	SSHPort int
	// LoadHeadroomGB is the memory a model needs beyond its own while it
	// loads; the plan keeps it free on the node beside every start.
	LoadHeadroomGB float64
	// GPUWorkingSetGB caps the node's budget (a Mac's Metal working set);
	// 0 means no cap.
	GPUWorkingSetGB float64
}

// Budget is what admission may place on the node, in GB:
// total - max(reserve, total*(1-ceiling)), never below 0, and never above
// the GPU working set when one is set.
func (n Node) Budget() float64 {
	b := math.Max(0, n.MemoryGB-n.Held())
	if n.GPUWorkingSetGB > 0 {
		b = math.Min(b, n.GPUWorkingSetGB)
	}
	return b
}

// capped reports whether the GPU working set, not the guard, sets the budget.
func (n Node) capped() bool {
	return n.GPUWorkingSetGB > 0 && n.GPUWorkingSetGB < math.Max(0, n.MemoryGB-n.Held())
}

// Held is the memory, in GB, the guard keeps free on the node:
// max(reserve, total*(1-ceiling)).
func (n Node) Held() float64 {
	return math.Max(n.Guard.ReserveGB, n.MemoryGB*(1-n.Guard.Ceiling))
}

// Model is one weights file as it sits on a node.
type Model struct {
	Name   string
	Path   string
	Source string
	SHA256 string
	SizeGB float64
	// MemoryGB is the memory the loaded model occupies, the one number
	// every memory rule, the planner and the simulator use: memory_gb as
	// declared, or Estimate's when memory_gb is absent.
	MemoryGB float64
	// Declared says memory_gb was written in the pool file.
	Declared bool
	// Estimate is the memory estimated from the model's GGUF header and
	// args, made while loading; nil when none was made.
	Estimate *MemoryEstimate
	Args     []string
}

// MemoryEstimate is a model's resident memory as estimated from its GGUF
// header and the llama-server arguments it runs with.
type MemoryEstimate struct {
	GB float64
	// Args names the arguments that drive it, defaults marked:
	// "ctx 32768, 4 slots (default), KV f16/f16 (default), ...".
	Args string
	// Parts splits it: "weights 17.6 GB + KV 5.4 GB + compute 0.8 GB".
	Parts string
}

// SchemeHostProblem says what is wrong with a model source the schema's
// #Source admits as host:/path but whose host is spelt like a URL scheme
// (file:/m.gguf, https:/m.gguf): a file URL or URL with a slash missing,
// which would have the node copy from a host named "file". It returns ""
// for any other source.
func SchemeHostProblem(src string) string {
	host, rest, ok := strings.Cut(src, ":")
	if !ok || strings.HasPrefix(rest, "//") {
		return ""
	}
	switch host {
	case "file":
		return fmt.Sprintf("%q reads as host %q: a file on the machine running poolc is written file:///absolute/path", src, host)
	case "http", "https":
		return fmt.Sprintf("%q reads as host %q: a URL is written %s://host/path", src, host, host)
	}
	return ""
}

// Residency says when a lane is loaded and whether it may be evicted.
type Residency string

// The residencies, from most to least sticky.
const (
	// KeepWarm lanes are always loaded and never evicted.
	KeepWarm Residency = "keep-warm"
	// Preferred lanes are restored when idle room exists and evicted before keep-warm ones.
	Preferred Residency = "preferred"
	// OnDemand lanes load on first request and are evicted least recently used first.
	OnDemand Residency = "on-demand"
)

// Lane is one llama-server process of one model. Placement lists candidate
// nodes in priority order; Selector, when set, matches nodes by labels and
// the matching nodes are candidates in name order.
type Lane struct {
	Name      string
	Model     string
	Residency Residency
	Aliases   []string
	Placement []string
	Selector  map[string]string
	Port      int
}

// Cloud is the fallback that sends a request to a hosted model; it may only
// end a fallback list.
const Cloud = "cloud"

// Alias is a public model name routed to one lane, with fallbacks tried in
// order when the lane cannot serve. Lane is the effective lane: from the
// alias block or from the lane that lists the alias.
type Alias struct {
	Name      string
	Lane      string
	Fallbacks []string
}

// Profile is a named overlay of the fleet: nodes it cordons and lane
// overrides. Exactly one profile of a pool that has profiles is active.
type Profile struct {
	Name   string
	Cordon []string
	Lanes  []LaneOverride
}

// LaneOverride replaces a lane's residency, placement or selector while its
// profile is active; empty fields leave the lane as declared.
type LaneOverride struct {
	Lane      string
	Residency Residency
	Placement []string
	Selector  map[string]string
}

// PodPool is a priority-ordered set of k3d/Kubernetes clusters that run Jobs.
type PodPool struct {
	Name        string
	Image       string
	Namespace   string
	PodMemoryGB float64
	Members     []Member
	// Cluster names the plugin that sets members up and tears them down;
	// ImageSync the one that copies the image to their registries, ""
	// when none does (then no image-sync step is planned and Jobs pull
	// Image as given).
	Cluster   string
	ImageSync string
}

// DefaultCapacity is the number of concurrent Jobs a member runs when its
// capacity is not given.
const DefaultCapacity = 2

// Member is one cluster of a pod pool, in priority order.
type Member struct {
	Context string
	SSHHost string
	// SSHPort is SSHHost's SSH port, 0 for the default (DefaultSSHPort).
	SSHPort  int
	Capacity int
	Registry Registry
}

// Registry is a k3d image registry, reached as Name:Port. The zero value
// means the member has no registry.
type Registry struct {
	Name string
	Port int
}

// IsZero reports whether no registry is set.
func (r Registry) IsZero() bool { return r.Name == "" && r.Port == 0 }

// String returns NAME:PORT, or "" for no registry.
func (r Registry) String() string {
	if r.IsZero() {
		return ""
	}
	return r.Name + ":" + itoa(r.Port)
}

// Plugin declares an actuator plugin: built into poolc or a binary found by
// Path, optionally pinned by SHA256, with Config passed to it as is.
type Plugin struct {
	Name    string
	Builtin bool
	Path    string
	SHA256  string
	Config  map[string]any
	// Sensitive are the paths in Config of the values the pool file
	// marks secret (HCL sensitive(...), CUE @poolc(sensitive)); "*"
	// stands for any list item. Like the fields a plugin's schema marks,
	// they are redacted from everything poolc prints.
	Sensitive [][]string
}

// StateBackend says where poolc keeps the current state of the pool: a
// file (Path) or etcd (Endpoints, Prefix, TLS; credentials come from the
// environment, never from the pool file).
type StateBackend struct {
	Backend string
	Path    string
	// Endpoints are the etcd members, host:port.
	Endpoints []string
	// Prefix is the etcd key prefix of the pool; "" means the default.
	Prefix string
	// LeaseTTLSeconds is the life of a lock's or node agent's lease
	// without heartbeats.
	LeaseTTLSeconds int
	// TLS names the files that secure the connection to etcd.
	TLS StateTLS
}

// StateTLS names the CA certificate and the client certificate and key
// poolc uses to reach etcd, relative to the configuration's directory.
type StateTLS struct {
	CA, Cert, Key string
}

// BudgetText explains the node's budget and which side of the guard sets
// it: "budget 115.2 GB (128 GB x 0.90)", "budget 56 GB (64 GB - 8 GB
// reserve)" or, capped on a Mac, "budget 48 GB (GPU working set of 64 GB)".
func (n Node) BudgetText() string {
	if n.capped() {
		return "budget " + GB(n.Budget()) + " (GPU working set of " + GB(n.MemoryGB) + ")"
	}
	if n.MemoryGB*(1-n.Guard.Ceiling) >= n.Guard.ReserveGB {
		return "budget " + GB(n.Budget()) + " (" + GB(n.MemoryGB) + " x " + strconv.FormatFloat(n.Guard.Ceiling, 'f', 2, 64) + ")"
	}
	return "budget " + GB(n.Budget()) + " (" + GB(n.MemoryGB) + " - " + GB(n.Guard.ReserveGB) + " reserve)"
}
