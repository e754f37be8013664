package pools

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Apply changes the fleet as a successful step would. It is the reference
// meaning of each step kind: the planner checks its plans with it, and
// actuators that stand in for hardware record their effects with it. The
// fleet must be normalized (sorted); Apply keeps it so.
func (f *Fleet) Apply(s Step) error {
	switch s.Kind {
	case StepPrefetch:
		// The file at the path is now the step's: it replaces any other.
		i, found := slices.BinarySearchFunc(f.Prefetched, *s.Prefetch, ComparePrefetch)
		if found {
			f.Prefetched[i] = *s.Prefetch
		} else {
			f.Prefetched = slices.Insert(f.Prefetched, i, *s.Prefetch)
		}
	case StepStart:
		l := *s.Lane
		l.Loaded = l.Residency != OnDemand
		f.putLane(l)
	case StepResidency:
		l := f.Process(s.Lane.Name, s.Lane.Node, s.Lane.Port)
		if l == nil {
			return fmt.Errorf("%s: lane %s is not running on %s", s.ID, s.Lane.Name, s.Lane.Node)
		}
		l.Residency = s.Lane.Residency
		l.Loaded = l.Loaded || l.Residency != OnDemand
	case StepRoute:
		i := sort.Search(len(f.Routes), func(i int) bool { return f.Routes[i].Alias >= s.Route.Alias })
		found := i < len(f.Routes) && f.Routes[i].Alias == s.Route.Alias
		switch {
		case s.Route.Lane == "" && found:
			f.Routes = slices.Delete(f.Routes, i, i+1)
		case s.Route.Lane == "":
		case found:
			f.Routes[i] = *s.Route
		default:
			f.Routes = slices.Insert(f.Routes, i, *s.Route)
		}
	case StepDrain:
		if f.Process(s.Lane.Name, s.Lane.Node, s.Lane.Port) == nil {
			return fmt.Errorf("%s: lane %s is not running on %s", s.ID, s.Lane.Name, s.Lane.Node)
		}
	case StepStop:
		if i, found := slices.BinarySearchFunc(f.Lanes, *s.Lane, compareProcess); found {
			f.Lanes = slices.Delete(f.Lanes, i, i+1)
		}
	case StepMemberEnsure, StepImageSync:
		i, found := f.member(s.Member.Key())
		if found {
			f.Members[i] = *s.Member
		} else {
			f.Members = slices.Insert(f.Members, i, *s.Member)
		}
	case StepMemberRemove:
		if i, found := f.member(s.Member.Key()); found {
			f.Members = slices.Delete(f.Members, i, i+1)
		}
	default:
		return fmt.Errorf("%s: unknown step kind %q", s.ID, s.Kind)
	}
	return nil
}

func (f *Fleet) putLane(l LaneState) {
	i, found := slices.BinarySearchFunc(f.Lanes, l, compareProcess)
	if found {
		f.Lanes[i] = l
		return
	}
	f.Lanes = slices.Insert(f.Lanes, i, l)
}

func (f *Fleet) member(key string) (int, bool) {
	i := sort.Search(len(f.Members), func(i int) bool { return f.Members[i].Key() >= key })
	return i, i < len(f.Members) && f.Members[i].Key() == key
}

// ComparePrefetch orders weights files by node, model and path, the order
// a normalized fleet keeps them in.
func ComparePrefetch(a, b Prefetch) int {
	if c := strings.Compare(a.Node, b.Node); c != 0 {
		return c
	}
	if c := strings.Compare(a.Model, b.Model); c != 0 {
		return c
	}
	return strings.Compare(a.Path, b.Path)
}

// Clone returns a deep copy of the fleet.
func (f Fleet) Clone() Fleet {
	c := Fleet{
		Nodes:      slices.Clone(f.Nodes),
		Lanes:      make([]LaneState, len(f.Lanes)),
		Routes:     slices.Clone(f.Routes),
		Prefetched: slices.Clone(f.Prefetched),
		Members:    slices.Clone(f.Members),
		Images:     slices.Clone(f.Images),
		Unobserved: slices.Clone(f.Unobserved),
	}
	for i, l := range f.Lanes {
		l.Args = slices.Clone(l.Args)
		c.Lanes[i] = l
	}
	c.Normalize()
	return c
}

// ApplyAll applies the steps in order, as Apply does one at a time, and
// stops at the first that fails, with Apply's error. It applies them to
// the fleet split by node (see ByNode), so the cost grows with the steps
// times the largest node, not with the steps times the whole fleet.
func (f *Fleet) ApplyAll(steps []Step) error {
	if len(steps) == 0 {
		f.Normalize() // what splitting and joining it again gives
		return nil
	}
	b := SplitByNode(*f)
	var err error
	for _, s := range steps {
		if err = b.Apply(s); err != nil {
			break
		}
	}
	*f = b.join()
	f.Normalize()
	return err
}

// ByNode is a fleet split by node, for applying steps one at a time as
// they finish. A step of a lane, a weights file or a route changes only
// its node's entries (a route's node is the one it routes to; a route
// that moves leaves its old node's), so Apply applies it to a fleet of
// that node's entries alone: its cost grows with the node, not with the
// whole fleet (Fleet.Apply inserts into sorted slices, which over a run of
// a step per lane or alias grows as their number squared). Fleet joins
// the nodes back into one.
type ByNode struct {
	nodes map[string]*Fleet
	// routedTo is the node each alias routes to ("" for the cloud).
	routedTo map[string]string
	rest     Fleet // everything but the lanes, weights files and routes
}

// SplitByNode splits a normalized fleet by node. Applying steps to the
// split leaves f as it is.
func SplitByNode(f Fleet) *ByNode {
	b := &ByNode{nodes: map[string]*Fleet{}, routedTo: make(map[string]string, len(f.Routes)), rest: f}
	b.rest.Lanes, b.rest.Prefetched, b.rest.Routes = nil, nil, nil
	b.rest.Members = slices.Clone(f.Members)
	for _, l := range f.Lanes {
		n := b.node(l.Node)
		n.Lanes = append(n.Lanes, l)
	}
	for _, p := range f.Prefetched {
		n := b.node(p.Node)
		n.Prefetched = append(n.Prefetched, p)
	}
	for _, r := range f.Routes {
		n := b.node(r.Node)
		n.Routes = append(n.Routes, r)
		b.routedTo[r.Alias] = r.Node
	}
	return b
}

func (b *ByNode) node(name string) *Fleet {
	n := b.nodes[name]
	if n == nil {
		n = &Fleet{}
		b.nodes[name] = n
	}
	return n
}

// Apply changes the fleet as Fleet.Apply does.
func (b *ByNode) Apply(s Step) error {
	switch {
	case s.Lane != nil:
		return b.node(s.Lane.Node).Apply(s)
	case s.Prefetch != nil:
		return b.node(s.Prefetch.Node).Apply(s)
	case s.Route != nil:
		r := *s.Route
		if at, ok := b.routedTo[r.Alias]; ok && (r.Lane == "" || at != r.Node) {
			n := b.node(at)
			if i, found := slices.BinarySearchFunc(n.Routes, r.Alias, func(x Route, alias string) int { return strings.Compare(x.Alias, alias) }); found {
				n.Routes = slices.Delete(n.Routes, i, i+1)
			}
			delete(b.routedTo, r.Alias)
		}
		if r.Lane == "" {
			return nil
		}
		b.routedTo[r.Alias] = r.Node
		return b.node(r.Node).Apply(s)
	}
	return b.rest.Apply(s)
}

// Node is the fleet as a step on the node sees it: the node's lanes and
// weights files, the routes to it (to the cloud for ""), and every member.
// It shares the split's slices: read it before the next Apply, and never
// change it.
func (b *ByNode) Node(name string) Fleet {
	f := b.rest
	if n := b.nodes[name]; n != nil {
		f.Lanes, f.Prefetched, f.Routes = n.Lanes, n.Prefetched, n.Routes
	}
	return f
}

// Fleet returns the fleet joined into one, normalized, as a deep copy:
// applying more steps does not change it.
func (b *ByNode) Fleet() Fleet { return b.join().Clone() }

// join joins the nodes' lanes, weights files and routes into one fleet,
// sorted as a normalized fleet keeps them: the weights files, which sort
// by node first, node after node, and the lanes and routes sorted (the
// nodes' processes are distinct, and the aliases, so the order is total).
// The fleet shares the split's other lists.
func (b *ByNode) join() Fleet {
	lanes, files := 0, 0
	names := make([]string, 0, len(b.nodes))
	for name, n := range b.nodes {
		lanes, files = lanes+len(n.Lanes), files+len(n.Prefetched)
		names = append(names, name)
	}
	slices.Sort(names)
	f := b.rest
	f.Lanes, f.Prefetched = make([]LaneState, 0, lanes), make([]Prefetch, 0, files)
	f.Routes = make([]Route, 0, len(b.routedTo))
	for _, name := range names {
		n := b.nodes[name]
		f.Lanes = append(f.Lanes, n.Lanes...)
		f.Prefetched = append(f.Prefetched, n.Prefetched...)
		f.Routes = append(f.Routes, n.Routes...)
	}
	slices.SortFunc(f.Lanes, compareProcess)
	slices.SortFunc(f.Routes, func(x, y Route) int { return strings.Compare(x.Alias, y.Alias) })
	return f
}
