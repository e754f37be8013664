package pools

// DefaultPlugin is the plugin that serves a target whose plugin is not set:
// the built-in simulator. The schema's defaults for a node's runtime, the
// gateway's plugin and a pod pool's cluster and image_sync say the same
// (compiler/examples_test.go checks that they agree).
const DefaultPlugin = "sim"

// DefaultSSHPort is a node's SSH port when its ssh_port is not set; the
// schema's default says the same (compiler/examples_test.go checks it).
const DefaultSSHPort = 22

// PluginDir is the plugin directory inside a pool's own directory, the
// first place an external plugin is looked for, and PluginBinaryPrefix
// begins the file name of each plugin there: plugin NAME is the file
// poolc-plugin-NAME.
const (
	// PluginDir is the plugin directory, relative to the pool's own
	// directory.
	PluginDir = ".poolc/plugins"
	// PluginBinaryPrefix begins the file name of each plugin in
	// PluginDir.
	PluginBinaryPrefix = "poolc-plugin-"
)

// PodPool returns the pod pool of that name, or nil.
func (p *Pool) PodPool(name string) *PodPool {
	for i := range p.PodPools {
		if p.PodPools[i].Name == name {
			return &p.PodPools[i]
		}
	}
	return nil
}

// Target is something a plugin acts on: a node (its lanes and
// prefetches), the gateway (routes), a pod pool's members (cluster) or a
// pod pool's image sync. Path is the attribute that names the plugin.
type Target struct {
	// What names the target for messages: `node "spark-01"`, `gateway`,
	// `pod_pool "harness" cluster`.
	What string
	// Name is the node's or pod pool's name ("" for the gateway).
	Name   string
	Plugin string
	Path   Path
	// Role is the target's kind: "runtime", "gateway", "cluster" or
	// "image_sync".
	Role string
}

// orDefault is the plugin name, or DefaultPlugin when it is empty.
func orDefault(name string) string {
	if name == "" {
		return DefaultPlugin
	}
	return name
}

// Targets lists the pool's targets and the plugin serving each: nodes in
// name order, the gateway, then each pod pool's cluster and, when the pod
// pool names one, its image sync (no plugin serves an image sync the pool
// does not ask for, the sim included).
func (p *Pool) Targets() []Target {
	var out []Target
	for _, n := range p.Nodes {
		out = append(out, Target{What: "node " + quote(n.Name), Name: n.Name, Plugin: orDefault(n.Runtime), Path: Path{"node", n.Name, "runtime"}, Role: "runtime"})
	}
	out = append(out, Target{What: "gateway", Plugin: orDefault(p.Gateway), Path: Path{"gateway", "plugin"}, Role: "gateway"})
	for _, pp := range p.PodPools {
		out = append(out, Target{What: "pod_pool " + quote(pp.Name) + " cluster", Name: pp.Name, Plugin: orDefault(pp.Cluster), Path: Path{"pod_pool", pp.Name, "cluster"}, Role: "cluster"})
		if pp.ImageSync != "" {
			out = append(out, Target{What: "pod_pool " + quote(pp.Name) + " image_sync", Name: pp.Name, Plugin: pp.ImageSync, Path: Path{"pod_pool", pp.Name, "image_sync"}, Role: "image_sync"})
		}
	}
	return out
}

func quote(s string) string { return `"` + s + `"` }

// StepPlugin names the plugin that carries out the step: its node's
// runtime for lane steps and prefetches, the gateway's for routes, its pod
// pool's cluster or image sync for member steps. It is "" when the step's
// node or pod pool is no longer in the pool; the state's record of who
// served it then says (State.Left).
func (p *Pool) StepPlugin(s Step) string {
	return p.PluginOf(StepTarget(s))
}

// PluginOf names the plugin serving the pool's target of that role and
// name, or "" when the pool has no such target.
func (p *Pool) PluginOf(role, name string) string {
	switch role {
	case "runtime":
		if n := p.Node(name); n != nil {
			return orDefault(n.Runtime)
		}
	case "gateway":
		return orDefault(p.Gateway)
	case "cluster", "image_sync":
		pp := p.PodPool(name)
		switch {
		case pp == nil:
		case role == "cluster":
			return orDefault(pp.Cluster)
		default:
			return pp.ImageSync
		}
	}
	return ""
}

// StepTarget is the role (as Target.Role) and name of the target a step
// acts on: its node, "" for the gateway, its member's pod pool.
func StepTarget(s Step) (role, name string) {
	switch s.Kind {
	case StepRoute:
		return "gateway", ""
	case StepMemberEnsure, StepMemberRemove:
		return "cluster", s.Member.PodPool
	case StepImageSync:
		return "image_sync", s.Member.PodPool
	}
	node := s.Node
	if node == "" && s.Lane != nil {
		node = s.Lane.Node
	}
	if node == "" && s.Prefetch != nil {
		node = s.Prefetch.Node
	}
	return "runtime", node
}

// TargetPlugins names the plugins the pool's targets use, in the order
// Targets first names them.
func (p *Pool) TargetPlugins() []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range p.Targets() {
		if !seen[t.Plugin] {
			seen[t.Plugin] = true
			out = append(out, t.Plugin)
		}
	}
	return out
}
