package pools

import (
	"slices"
	"strings"
)

// Served is the state's record of a target and the plugin that serves
// it, as Terraform records each resource's provider: once the target has
// left the configuration (a node or pod pool deleted from it), the steps
// that take away what it still holds (the stops of its lanes, the
// member-removes of its members) go to this plugin, with what the plugin
// needs to reach the target, kept from the configuration: a node's
// address and login, a pod pool's namespace and pod memory.
type Served struct {
	// Role and Name are the target's, as Target's.
	Role string `json:"role"`
	Name string `json:"name,omitempty"`
	// Plugin is the plugin that served the target.
	Plugin string `json:"plugin"`

	// A node's (role runtime).
	Address     string            `json:"address,omitempty"`
	SSHUser     string            `json:"ssh_user,omitempty"`
	SSHPort     int               `json:"ssh_port,omitempty"`
	KubeContext string            `json:"kube_context,omitempty"`
	MemoryGB    float64           `json:"memory_gb,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`

	// A pod pool's (roles cluster and image_sync).
	Namespace   string  `json:"namespace,omitempty"`
	PodMemoryGB float64 `json:"pod_memory_gb,omitempty"`
}

// What names the target for messages, as Target.What does.
func (s Served) What() string {
	switch s.Role {
	case "runtime":
		return "node " + quote(s.Name)
	case "gateway":
		return "gateway"
	}
	return "pod_pool " + quote(s.Name) + " " + s.Role
}

// Node is the node as the record keeps it.
func (s Served) Node() Node {
	return Node{Name: s.Name, Address: s.Address, SSHUser: s.SSHUser, SSHPort: s.SSHPort, KubeContext: s.KubeContext,
		MemoryGB: s.MemoryGB, Labels: s.Labels, Runtime: s.Plugin}
}

func compareServed(a, b Served) int {
	if c := strings.Compare(a.Role, b.Role); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// served is the record of each of the pool's targets.
func (p *Pool) served() []Served {
	var out []Served
	for _, t := range p.Targets() {
		s := Served{Role: t.Role, Name: t.Name, Plugin: t.Plugin}
		switch t.Role {
		case "runtime":
			n := p.Node(t.Name)
			s.Address, s.SSHUser, s.SSHPort, s.KubeContext, s.MemoryGB, s.Labels = n.Address, n.SSHUser, n.SSHPort, n.KubeContext, n.MemoryGB, n.Labels
		case "cluster", "image_sync":
			pp := p.PodPool(t.Name)
			s.Namespace, s.PodMemoryGB = pp.Namespace, pp.PodMemoryGB
		}
		out = append(out, s)
	}
	return out
}

// holds reports whether the fleet holds something of the target that a
// step must take away when the target leaves: lanes or weights files on a
// node, members of a pod pool (for its cluster plugin; an image sync
// plans no step for a member that leaves).
func (f *Fleet) holds(role, name string) bool {
	switch role {
	case "runtime":
		return slices.ContainsFunc(f.Lanes, func(l LaneState) bool { return l.Node == name }) ||
			slices.ContainsFunc(f.Prefetched, func(p Prefetch) bool { return p.Node == name })
	case "cluster":
		return slices.ContainsFunc(f.Members, func(m MemberState) bool { return m.PodPool == name })
	case "gateway":
		return len(f.Routes) > 0
	}
	return false
}

// RecordServed brings the state's records of who serves each target up
// to date with the pool: a record for each target the pool has (as the
// pool now declares it), and, of the targets it no longer has, the
// records of those the fleet still holds something of; the rest are
// dropped. It reports whether the records changed. An apply records them
// before its first step, so that whatever a step leaves on a target can
// be taken away through the same plugin after the target left the
// configuration.
func (st *State) RecordServed(p *Pool) bool {
	now := p.served()
	for _, s := range st.Served {
		if !slices.ContainsFunc(now, func(n Served) bool { return compareServed(n, s) == 0 }) && st.holds(s.Role, s.Name) {
			now = append(now, s)
		}
	}
	slices.SortFunc(now, compareServed)
	changed := !slices.EqualFunc(now, st.Served, func(a, b Served) bool {
		return compareServed(a, b) == 0 && a.Plugin == b.Plugin && a.Address == b.Address && a.SSHUser == b.SSHUser &&
			a.SSHPort == b.SSHPort && a.KubeContext == b.KubeContext && a.MemoryGB == b.MemoryGB && a.Namespace == b.Namespace &&
			a.PodMemoryGB == b.PodMemoryGB && equalLabels(a.Labels, b.Labels)
	})
	st.Served = now
	return changed
}

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Left lists the records of the targets the pool no longer has that the
// fleet still holds something of, in role and name order: each names the
// plugin that must carry out the steps taking that away.
func (st *State) Left(p *Pool) []Served {
	var out []Served
	for _, s := range st.Served {
		if p.PluginOf(s.Role, s.Name) == "" && st.holds(s.Role, s.Name) {
			out = append(out, s)
		}
	}
	return out
}

// LeftPlugin names the plugin the records say serves the target of a
// step whose target left the pool, or "".
func LeftPlugin(left []Served, s Step) string {
	role, name := StepTarget(s)
	for _, l := range left {
		if l.Role == role && l.Name == name {
			return l.Plugin
		}
	}
	return ""
}
