package pools

import "sort"

// Profile returns the named profile, or nil.
func (p *Pool) Profile(name string) *Profile {
	for i := range p.Profiles {
		if p.Profiles[i].Name == name {
			return &p.Profiles[i]
		}
	}
	return nil
}

// Node returns the named node, or nil.
func (p *Pool) Node(name string) *Node {
	i := sort.Search(len(p.Nodes), func(i int) bool { return p.Nodes[i].Name >= name })
	if i < len(p.Nodes) && p.Nodes[i].Name == name {
		return &p.Nodes[i]
	}
	return nil
}

// Model returns the named model, or nil.
func (p *Pool) Model(name string) *Model {
	i := sort.Search(len(p.Models), func(i int) bool { return p.Models[i].Name >= name })
	if i < len(p.Models) && p.Models[i].Name == name {
		return &p.Models[i]
	}
	return nil
}

// Lane returns the named lane, or nil.
func (p *Pool) Lane(name string) *Lane {
	i := sort.Search(len(p.Lanes), func(i int) bool { return p.Lanes[i].Name >= name })
	if i < len(p.Lanes) && p.Lanes[i].Name == name {
		return &p.Lanes[i]
	}
	return nil
}

// View is the fleet as one profile shapes it: the lanes with the profile's
// overrides applied and the set of cordoned nodes. The zero profile name
// gives the fleet as declared.
type View struct {
	Profile  string
	Lanes    []Lane
	Cordoned map[string]bool
}

// Under returns the fleet as the named profile shapes it.
func (p *Pool) Under(profile string) View {
	v := View{Profile: profile, Lanes: p.Lanes, Cordoned: map[string]bool{}}
	pr := p.Profile(profile)
	if pr == nil {
		return v
	}
	for _, n := range pr.Cordon {
		v.Cordoned[n] = true
	}
	if len(pr.Lanes) == 0 {
		return v
	}
	v.Lanes = append([]Lane(nil), p.Lanes...)
	for _, o := range pr.Lanes {
		i := sort.Search(len(v.Lanes), func(i int) bool { return v.Lanes[i].Name >= o.Lane })
		if i == len(v.Lanes) || v.Lanes[i].Name != o.Lane {
			continue
		}
		l := &v.Lanes[i]
		if o.Residency != "" {
			l.Residency = o.Residency
		}
		if o.Placement != nil {
			l.Placement, l.Selector = o.Placement, nil
		}
		if o.Selector != nil {
			l.Selector, l.Placement = o.Selector, nil
		}
	}
	return v
}

// Candidates returns the nodes a lane may run on, in priority order: its
// placement list as written, or the nodes its selector matches in name
// order. Names of undeclared nodes are left out.
func (p *Pool) Candidates(l Lane) []string {
	return p.candidates(l, func(name string) *Node { return p.Node(name) })
}

// NodeIndex finds a pool's nodes by name in constant time, for code that
// looks nodes up once per lane or more (Pool.Node is a binary search).
// It points into the pool's Nodes, so it holds while they are unchanged.
type NodeIndex map[string]*Node

// NodeIndex indexes p's nodes by name.
func (p *Pool) NodeIndex() NodeIndex {
	ix := make(NodeIndex, len(p.Nodes))
	for i := range p.Nodes {
		ix[p.Nodes[i].Name] = &p.Nodes[i]
	}
	return ix
}

// CandidatesIn is Candidates with the nodes looked up in ix, an index of
// p's nodes.
func (p *Pool) CandidatesIn(ix NodeIndex, l Lane) []string {
	return p.candidates(l, func(name string) *Node { return ix[name] })
}

// candidates is Candidates with nodes looked up by node.
func (p *Pool) candidates(l Lane, node func(string) *Node) []string {
	var out []string
	if l.Selector != nil {
		for _, n := range p.Nodes {
			if matches(n.Labels, l.Selector) {
				out = append(out, n.Name)
			}
		}
		return out
	}
	for _, name := range l.Placement {
		if node(name) != nil {
			out = append(out, name)
		}
	}
	return out
}

func matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}
