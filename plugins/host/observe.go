package host

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"poolc.dev/poolc/plugins/convert"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// Observation is what the plugins saw of their targets, ready to be laid
// over a state: each plugin speaks only for its own targets, and only for
// the parts of a fleet its capabilities say it observes.
type Observation struct {
	seen []seen
}

// seen is one plugin's observation of the parts it observes, and of its
// targets those it could not observe.
type seen struct {
	plugin string
	parts  []string
	owns   owner
	fleet  pools.Fleet
	unobs  []pools.Unobserved // of its own targets only
}

// unobserved reports whether the plugin could not observe the target of
// that kind, node name or member key.
func (s seen) unobserved(kind pools.TargetKind, key string) bool {
	return slices.ContainsFunc(s.unobs, func(u pools.Unobserved) bool {
		switch u.Kind {
		case pools.TargetNode:
			return kind == u.Kind && key == u.Name
		case pools.TargetGateway:
			return kind == u.Kind
		}
		return kind == u.Kind && key == (pools.MemberState{PodPool: u.PodPool, Context: u.Context}).Key()
	})
}

// own keeps the entries of unobs that name a target of the plugin, with
// the plugin's name: a plugin speaks only for its own targets.
func (o owner) own(plugin string, unobs []pools.Unobserved) []pools.Unobserved {
	var out []pools.Unobserved
	for _, u := range unobs {
		mine := false
		switch u.Kind {
		case pools.TargetNode:
			mine = o.nodes[u.Name]
		case pools.TargetGateway:
			mine = o.gateway
		case pools.TargetMember:
			mine = o.clusters[u.PodPool]
		case pools.TargetRegistry:
			mine = o.imageSyncs[u.PodPool]
		}
		if mine {
			u.Plugin = plugin
			out = append(out, u)
		}
	}
	return out
}

// owner says which entries of a fleet belong to a plugin's targets.
type owner struct {
	nodes      map[string]bool // runtime nodes
	gateway    bool
	clusters   map[string]bool // pod pools whose cluster plugin it is
	imageSyncs map[string]bool // pod pools whose image sync it is
	listed     map[string]bool // keys of the members the pool lists
}

// ownerOf is what the plugin serves in the pool, and of the targets that
// left it (the state's records), those it served.
func ownerOf(pool *pools.Pool, left []pools.Served, plugin string) owner {
	o := owner{nodes: map[string]bool{}, clusters: map[string]bool{}, imageSyncs: map[string]bool{}, listed: map[string]bool{}}
	for _, pp := range pool.PodPools {
		for _, m := range pp.Members {
			o.listed[pools.MemberState{PodPool: pp.Name, Context: m.Context}.Key()] = true
		}
	}
	for _, t := range pool.Targets() {
		if t.Plugin != plugin {
			continue
		}
		switch t.Role {
		case "runtime":
			o.nodes[t.Name] = true
		case "gateway":
			o.gateway = true
		case "cluster":
			o.clusters[t.Name] = true
		case "image_sync":
			o.imageSyncs[t.Name] = true
		}
	}
	for _, l := range left {
		switch {
		case l.Plugin != plugin:
		case l.Role == "runtime":
			o.nodes[l.Name] = true
		case l.Role == "cluster":
			o.clusters[l.Name] = true
		}
	}
	return o
}

// Drift is a difference between the state and what a plugin observed.
type Drift struct {
	// Plugin is the plugin that saw it.
	Plugin string
	// What says what differs: `lane "chat" on "n1" is gone`.
	What string
}

// Observe asks every plugin, at once, what it sees of its targets. A
// plugin whose observation has errors contributes nothing; a plugin that
// names a part of a fleet poolc does not know is an error.
func (s *Set) Observe(ctx context.Context) (Observation, pools.Diagnostics) {
	results := make([]sdk.ObserveResponse, len(s.plugins))
	var wg sync.WaitGroup
	for i, p := range s.plugins {
		if len(p.info.Capabilities.Observes) == 0 {
			continue
		}
		wg.Go(func() { results[i] = restartable{p}.Observe(ctx, sdk.ObserveRequest{}) })
	}
	wg.Wait()

	var obs Observation
	var ds pools.Diagnostics
	for i, p := range s.plugins {
		r := results[i]
		ds = append(ds, redactDiagnostics(p.redact, atPlugin(p.info.Name, r.Diagnostics))...)
		if r.Diagnostics.HasErrors() || len(p.info.Capabilities.Observes) == 0 {
			continue
		}
		var parts []string
		for _, part := range p.info.Capabilities.Observes {
			if !slices.Contains(fleetParts, part) {
				ds.Errorf("plugin-observe", pools.Path{"plugin", p.info.Name},
					"plugin %q says it observes %q, which is not a part of a fleet (%s)", p.info.Name, part, strings.Join(fleetParts, ", "))
				continue
			}
			parts = append(parts, part)
		}
		owns, fleet := ownerOf(s.pool, s.left, p.info.Name), convert.Fleet(r.Fleet)
		obs.seen = append(obs.seen, seen{plugin: p.info.Name, parts: parts, owns: owns, fleet: fleet, unobs: owns.own(p.info.Name, fleet.Unobserved)})
	}
	return obs, ds
}

// fleetParts are the parts of a fleet a plugin may observe.
var fleetParts = []string{sdk.ObserveNodes, sdk.ObserveLanes, sdk.ObservePrefetched, sdk.ObserveRoutes, sdk.ObserveMembers, sdk.ObserveImages}

// Refresh lays the observation over the fleet: for each plugin and each
// part it observes, the fleet's entries of that part for the plugin's
// targets become what the plugin saw (an entry the plugin reports for a
// target that is not its own is ignored). A target the plugin could not
// observe keeps what the fleet says of it, and is listed in
// f.Unobserved; such a node is not taken as down either (only its
// membership can say that). It returns what changed, each named with the
// plugin that saw it, in a stable order.
func (o Observation) Refresh(f *pools.Fleet) []Drift {
	var drift []Drift
	f.Unobserved = nil
	for _, s := range o.seen {
		f.Unobserved = append(f.Unobserved, s.unobs...)
		for i, n := range f.Nodes {
			if s.unobserved(pools.TargetNode, n.Name) {
				f.Nodes[i].Down = false
			}
		}
		before := f.Clone()
		for _, part := range s.parts {
			s.lay(part, f)
		}
		f.Normalize()
		for _, what := range diff(before, *f) {
			drift = append(drift, Drift{Plugin: s.plugin, What: what})
		}
	}
	return drift
}

// lay replaces one part of f, for the plugin's targets, with what it saw.
func (s seen) lay(part string, f *pools.Fleet) {
	o, seen := s.owns, s.fleet
	node := func(name string) bool { return o.nodes[name] && !s.unobserved(pools.TargetNode, name) }
	switch part {
	case sdk.ObserveNodes:
		f.Nodes = replace(f.Nodes, seen.Nodes, func(n pools.NodeState) bool { return node(n.Name) })
	case sdk.ObserveLanes:
		type process struct {
			name, node, path string
			port             int
		}
		was := make(map[process]pools.LaneState, len(f.Lanes))
		for _, w := range f.Lanes {
			if k := (process{w.Name, w.Node, w.Path, w.Port}); !hasKey(was, k) {
				was[k] = w
			}
		}
		f.Lanes = replace(f.Lanes, seen.Lanes, func(l pools.LaneState) bool { return node(l.Node) })
		for i, l := range f.Lanes {
			// What a plugin cannot see of a process (the digest and source
			// of the file it loads) stays as the state recorded it.
			if w, ok := was[process{l.Name, l.Node, l.Path, l.Port}]; ok {
				f.Lanes[i].SHA256 = cmp.Or(l.SHA256, w.SHA256)
				f.Lanes[i].Source = cmp.Or(l.Source, w.Source)
			}
		}
	case sdk.ObservePrefetched:
		type file struct{ node, model, path string }
		was := make(map[file]string, len(f.Prefetched))
		for _, w := range f.Prefetched {
			if k := (file{w.Node, w.Model, w.Path}); !hasKey(was, k) {
				was[k] = w.SHA256
			}
		}
		f.Prefetched = replace(f.Prefetched, seen.Prefetched, func(p pools.Prefetch) bool { return node(p.Node) })
		for i, p := range f.Prefetched {
			if sum, ok := was[file{p.Node, p.Model, p.Path}]; ok {
				f.Prefetched[i].SHA256 = cmp.Or(p.SHA256, sum)
			}
		}
	case sdk.ObserveRoutes:
		f.Routes = replace(f.Routes, seen.Routes, func(pools.Route) bool { return o.gateway && !s.unobserved(pools.TargetGateway, "") })
	case sdk.ObserveMembers:
		// The image of a member whose pod pool syncs images with
		// another plugin is that plugin's to observe: keep it.
		images := map[string]string{}
		for _, m := range f.Members {
			images[m.Key()] = m.Image
		}
		member := func(m pools.MemberState) bool {
			return o.clusters[m.PodPool] && !s.unobserved(pools.TargetMember, m.Key())
		}
		f.Members = replace(f.Members, seen.Members, member)
		for i, m := range f.Members {
			if member(m) && !o.imageSyncs[m.PodPool] {
				f.Members[i].Image = images[m.Key()]
			}
		}
	case sdk.ObserveImages:
		registry := func(m pools.MemberImage) bool {
			return o.imageSyncs[m.PodPool] && !s.unobserved(pools.TargetRegistry, m.Key())
		}
		f.Images = replace(f.Images, seen.Images, registry)
		for i, m := range f.Members {
			if !o.imageSyncs[m.PodPool] || s.unobserved(pools.TargetRegistry, m.Key()) || m.Registry == "" || !o.listed[m.Key()] {
				// A member without a registry has no image to sync; one
				// leaving the pool is not in the image sync's inventory.
				continue
			}
			f.Members[i].Image = ""
			if j := slices.IndexFunc(seen.Members, func(x pools.MemberState) bool { return x.Key() == m.Key() }); j >= 0 {
				f.Members[i].Image = seen.Members[j].Image
			}
		}
	}
}

// hasKey reports whether m holds k: the first entry of a key is the one
// a lookup finds, as a scan from the start would.
func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

// replace drops the entries of have that mine selects and adds those of
// seen that it selects.
func replace[T any](have, seen []T, mine func(T) bool) []T {
	out := slices.DeleteFunc(slices.Clone(have), mine)
	for _, e := range seen {
		if mine(e) {
			out = append(out, e)
		}
	}
	return out
}

// diff names the entries that differ between two fleets: gone, new, or
// changed, by part, in a stable order.
func diff(before, after pools.Fleet) []string {
	var out []string
	out = append(out, diffPart("node", before.Nodes, after.Nodes, func(n pools.NodeState) string { return strconv.Quote(n.Name) }, equal)...)
	// What a plugin read of a process (its pid, command line, resident
	// memory) is a reading, not a difference from the state.
	out = append(out, diffPart("lane", unobserved(before.Lanes), unobserved(after.Lanes),
		func(l pools.LaneState) string { return strconv.Quote(l.Name) + " on " + strconv.Quote(l.Node) }, sameLane)...)
	out = append(out, diffPart("weights", before.Prefetched, after.Prefetched,
		func(p pools.Prefetch) string { return "of " + strconv.Quote(p.Model) + " on " + strconv.Quote(p.Node) }, equal)...)
	out = append(out, diffPart("route", before.Routes, after.Routes, func(r pools.Route) string { return "of alias " + strconv.Quote(r.Alias) }, equal)...)
	out = append(out, diffPart("member", before.Members, after.Members,
		func(m pools.MemberState) string {
			return strconv.Quote(m.Context) + " of pod pool " + strconv.Quote(m.PodPool)
		}, equal)...)
	return out
}

// unobserved is lanes without what was read of their processes.
func unobserved(lanes []pools.LaneState) []pools.LaneState {
	out := slices.Clone(lanes)
	for i := range out {
		out[i].Observed = nil
	}
	return out
}

// equal reports whether two entries are equal, for the entries whose
// every field compares with ==.
func equal[T comparable](a, b T) bool { return a == b }

// sameLane reports whether two lanes are deeply equal (a field added to
// lanes is compared too; a nil and an empty list, which are not, are told
// apart by their JSON).
func sameLane(a, b pools.LaneState) bool { return reflect.DeepEqual(a, b) }

// diffPart names the entries of one part that differ, by key: an entry
// changed when its JSON did. same tells equal entries apart without their
// JSON, which is written only for entries it does not find the same.
func diffPart[T any](noun string, before, after []T, key func(T) string, same func(a, b T) bool) []string {
	text := func(e T) string {
		b, _ := json.Marshal(e)
		return string(b)
	}
	old := make(map[string]T, len(before))
	for _, e := range before {
		old[key(e)] = e
	}
	now := make(map[string]T, len(after))
	for _, e := range after {
		now[key(e)] = e
	}
	var out []string
	for k, v := range old {
		w, ok := now[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s %s is gone", noun, k))
		case !same(w, v):
			if tw, tv := text(w), text(v); tw != tv {
				out = append(out, fmt.Sprintf("%s %s changed: now %s, was %s", noun, k, tw, tv))
			}
		}
	}
	for k := range now {
		if _, ok := old[k]; !ok {
			out = append(out, fmt.Sprintf("%s %s appeared", noun, k))
		}
	}
	sort.Strings(out)
	return out
}

// StepPart is the part of a fleet a step of kind changes: what a plugin
// must observe (sdk.Capabilities.Observes) for poolc to tell, after a
// kill, whether such a step it had sent ran.
func StepPart(kind pools.StepKind) string {
	switch kind {
	case pools.StepPrefetch:
		return sdk.ObservePrefetched
	case pools.StepRoute:
		return sdk.ObserveRoutes
	case pools.StepMemberEnsure, pools.StepMemberRemove:
		return sdk.ObserveMembers
	case pools.StepImageSync:
		return sdk.ObserveImages
	}
	return sdk.ObserveLanes // start, residency, drain, stop
}

// Observes reports whether the running plugin of that name observes part
// of a fleet; false when the set has no such plugin.
func (s *Set) Observes(plugin, part string) bool {
	p, ok := s.byName[plugin]
	return ok && slices.Contains(p.info.Capabilities.Observes, part)
}
