package host

import (
	"context"
	"slices"
	"strings"
	"sync"

	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// fleetList is a part of a fleet a plugin may manage: its name in
// ObserveResponse.Managed (the fleet's JSON field name) and how it is
// taken into the merged fleet.
type fleetList struct {
	name string
	take func(dst, src *pools.Fleet)
}

// fleetLists are the parts of a fleet, in the fleet's order.
var fleetLists = []fleetList{
	{"nodes", func(dst, src *pools.Fleet) { dst.Nodes = src.Nodes }},
	{"lanes", func(dst, src *pools.Fleet) { dst.Lanes = src.Lanes }},
	{"routes", func(dst, src *pools.Fleet) { dst.Routes = src.Routes }},
	{"prefetched", func(dst, src *pools.Fleet) { dst.Prefetched = src.Prefetched }},
	{"members", func(dst, src *pools.Fleet) { dst.Members = src.Members }},
}

// Observe asks every plugin, at once, what it sees, and merges the lists
// each one manages over an empty fleet; lists no plugin manages stay
// empty. managed names the lists that were observed ("lanes", "routes",
// ...): the caller takes those from the fleet and keeps its own state of
// the others. A plugin whose observation has errors contributes nothing.
// Two plugins that manage the same list, and a list name poolc does not
// know, are errors. The fleet is normalized.
func (s *Set) Observe(ctx context.Context) (fleet pools.Fleet, managed map[string]bool, ds pools.Diagnostics) {
	results := make([]sdk.ObserveResponse, len(s.plugins))
	var wg sync.WaitGroup
	for i, p := range s.plugins {
		wg.Go(func() { results[i] = restartable{p}.Observe(ctx, sdk.ObserveRequest{}) })
	}
	wg.Wait()

	owner := map[string]string{}
	managed = map[string]bool{}
	for i, p := range s.plugins {
		r := results[i]
		ds = append(ds, Diagnostics(p.info.Name, r.Diagnostics)...)
		if r.Diagnostics.HasErrors() {
			continue
		}
		for _, name := range r.Managed {
			k := slices.IndexFunc(fleetLists, func(l fleetList) bool { return l.name == name })
			switch other, taken := owner[name]; {
			case k < 0:
				names := make([]string, len(fleetLists))
				for j, l := range fleetLists {
					names[j] = l.name
				}
				ds.Errorf("plugin-observe", pools.Path{"plugin", p.info.Name},
					"plugin %q says it manages %q, which is not a part of the fleet (%s)", p.info.Name, name, strings.Join(names, ", "))
			case taken:
				ds.Errorf("plugin-conflict", pools.Path{"plugin", p.info.Name},
					"plugins %q and %q both say they manage the fleet's %s; only one may", other, p.info.Name, name)
			default:
				owner[name] = p.info.Name
				managed[name] = true
				fleetLists[k].take(&fleet, &r.Fleet)
			}
		}
	}
	fleet.Normalize()
	return fleet, managed, ds
}
