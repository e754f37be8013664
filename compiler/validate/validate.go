// Package validate holds the rules a pool must keep beyond its schema:
// string rules its patterns cannot say, references between elements, registry and port rules, and the capacity
// rules that bite in production. Every rule reports by attribute path and
// names the numbers or names that break it; the compiler attaches the
// file:line:col.
package validate

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"poolc.dev/poolc/compiler/suggest"
	"poolc.dev/poolc/pools"
)

// Pool runs every rule and returns all findings.
func Pool(p *pools.Pool) pools.Diagnostics {
	v := &validator{p: p, nodes: p.NodeIndex(), views: map[string]pools.View{}}
	v.strings()
	v.plugins()
	v.references()
	v.aliases()
	v.profiles()
	v.podPools()
	v.ports()
	v.routerPort()
	v.guards()
	v.capacity()
	return v.diags
}

type validator struct {
	p     *pools.Pool
	nodes pools.NodeIndex // p's nodes by name
	diags pools.Diagnostics
	views map[string]pools.View // by profile, see view
	// reservedOut are the nodes whose guard reserve takes all their
	// memory, reported by guards.
	reservedOut map[string]bool
}

// view returns the fleet as a profile shapes it, computed once per
// profile: applying a profile's lane overrides is a pass over every lane
// per override, and several rules look at each profile.
func (v *validator) view(profile string) pools.View {
	view, ok := v.views[profile]
	if !ok {
		view = v.p.Under(profile)
		v.views[profile] = view
	}
	return view
}

func (v *validator) errorf(code string, path pools.Path, format string, args ...any) {
	v.diags.Errorf(code, path, format, args...)
}

func (v *validator) references() {
	p := v.p
	addrs := map[string]string{}
	for _, n := range p.Nodes {
		if other, ok := addrs[n.Address]; ok {
			v.errorf("duplicate-address", pools.Path{"node", n.Name, "address"}, "node %q: address %q is also the address of node %q", n.Name, n.Address, other)
		}
		addrs[n.Address] = n.Name
	}
	models := make([]string, len(p.Models))
	for i, m := range p.Models {
		models[i] = m.Name
	}
	for _, l := range p.Lanes {
		if l.Name == pools.Cloud {
			v.errorf("reserved-name", pools.Path{"lane", l.Name}, "lane name %q is reserved for the hosted fallback", l.Name)
		}
		if p.Model(l.Model) == nil {
			v.errorf("unknown-model", pools.Path{"lane", l.Name, "model"}, "lane %q: model %q is not declared%s", l.Name, l.Model, didYouMean(l.Model, models))
		}
		v.placement(pools.Path{"lane", l.Name}, fmt.Sprintf("lane %q", l.Name), l.Placement, l.Selector, true)
	}
}

// placement checks a placement list or selector; required says whether
// one of them must be given (a lane) or may be absent (a profile override).
func (v *validator) placement(path pools.Path, who string, placement []string, selector map[string]string, required bool) {
	switch {
	case placement != nil && selector != nil:
		v.errorf("placement", path, "%s: set placement or selector, not both", who)
		return
	case required && len(placement) == 0 && selector == nil:
		v.errorf("placement", path, "%s has no placement: list candidate nodes in placement, or match node labels with selector", who)
		return
	}
	seen := map[string]bool{}
	for i, n := range placement {
		at := append(path[:len(path):len(path)], "placement", strconv.Itoa(i))
		switch {
		case v.p.Node(n) == nil:
			v.errorf("unknown-node", at, "%s: placement names node %q, which is not declared%s", who, n, didYouMean(n, v.nodeNames(), placement...))
		case seen[n]:
			v.errorf("placement", at, "%s: placement lists node %q twice", who, n)
		}
		seen[n] = true
	}
	if selector != nil && len(v.p.Candidates(pools.Lane{Selector: selector})) == 0 {
		v.errorf("selector", append(path[:len(path):len(path)], "selector"), "%s: selector %s matches no node", who, selectorText(selector))
	}
}

func (v *validator) nodeNames() []string {
	out := make([]string, len(v.p.Nodes))
	for i, n := range v.p.Nodes {
		out[i] = n.Name
	}
	return out
}

func (v *validator) laneNames() []string {
	out := make([]string, len(v.p.Lanes))
	for i, l := range v.p.Lanes {
		out[i] = l.Name
	}
	return out
}

func (v *validator) aliases() {
	for _, a := range v.p.Aliases {
		path := pools.Path{"alias", a.Name}
		if a.Name == pools.Cloud {
			v.errorf("reserved-name", path, "alias name %q is reserved for the hosted fallback", a.Name)
		}
		if a.Lane != "" && v.p.Lane(a.Lane) == nil {
			v.errorf("unknown-lane", append(path, "lane"), "alias %q: lane %q is not declared%s", a.Name, a.Lane, didYouMean(a.Lane, v.laneNames()))
		}
		seen := map[string]bool{}
		for i, f := range a.Fallbacks {
			at := pools.Path{"alias", a.Name, "fallbacks", strconv.Itoa(i)}
			switch {
			case seen[f]:
				v.errorf("fallback", at, "alias %q: fallback %q is listed twice", a.Name, f)
			case f == pools.Cloud && !slices.Contains(a.Fallbacks[i+1:], pools.Cloud) && i != len(a.Fallbacks)-1:
				v.errorf("fallback", at, "alias %q: %q must be the last fallback", a.Name, pools.Cloud)
			case f == pools.Cloud:
			case v.p.Lane(f) == nil:
				v.errorf("unknown-lane", at, "alias %q: fallback %q is not a declared lane%s", a.Name, f, didYouMean(f, v.laneNames(), append([]string{a.Lane}, a.Fallbacks...)...))
			case f == a.Lane:
				v.errorf("fallback", at, "alias %q: fallback %q is the alias's own lane", a.Name, f)
			}
			seen[f] = true
		}
	}
}

func (v *validator) profiles() {
	p := v.p
	names := make([]string, len(p.Profiles))
	for i, pr := range p.Profiles {
		names[i] = pr.Name
	}
	switch {
	case len(p.Profiles) > 0 && p.ActiveProfile == "":
		v.errorf("active-profile", pools.Path{"profile"}, "profiles %s are declared but none is active: set active_profile to one of them", quoted(names))
	case len(p.Profiles) == 0 && p.ActiveProfile != "":
		v.errorf("active-profile", pools.Path{"active_profile"}, "active_profile is %q, but no profile is declared", p.ActiveProfile)
	case p.ActiveProfile != "" && p.Profile(p.ActiveProfile) == nil:
		v.errorf("active-profile", pools.Path{"active_profile"}, "active_profile %q is not a declared profile%s", p.ActiveProfile, didYouMean(p.ActiveProfile, names))
	}
	for _, pr := range p.Profiles {
		for i, n := range pr.Cordon {
			if p.Node(n) == nil {
				v.errorf("unknown-node", pools.Path{"profile", pr.Name, "cordon", strconv.Itoa(i)}, "profile %q: cordon names node %q, which is not declared%s", pr.Name, n, didYouMean(n, v.nodeNames(), pr.Cordon...))
			}
		}
		for _, o := range pr.Lanes {
			path := pools.Path{"profile", pr.Name, "lane", o.Lane}
			who := fmt.Sprintf("profile %q lane %q", pr.Name, o.Lane)
			if p.Lane(o.Lane) == nil {
				v.errorf("unknown-lane", path, "profile %q overrides lane %q, which is not declared%s", pr.Name, o.Lane, didYouMean(o.Lane, v.laneNames()))
				continue
			}
			v.placement(path, who, o.Placement, o.Selector, false)
		}
	}
}

// didYouMean returns "; did you mean X?" for a near miss, or a short list of
// what is declared. It never proposes a name in listed: the names the same
// list already holds.
func didYouMean(name string, declared []string, listed ...string) string {
	if best := suggest.Nearest(name, without(declared, listed)); best != "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	switch {
	case len(declared) == 0:
		return "; none is declared"
	case len(declared) > 6:
		return "; declared: " + strings.Join(declared[:6], ", ") + ", ..."
	}
	return "; declared: " + strings.Join(declared, ", ")
}

// without returns the names not in exclude.
func without(names, exclude []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !contains(exclude, n) {
			out = append(out, n)
		}
	}
	return out
}

// quoted shows names as "a", "b" and "c".
func quoted(list []string) string {
	q := make([]string, len(list))
	for i, n := range list {
		q[i] = strconv.Quote(n)
	}
	return names(q)
}

func selectorText(sel map[string]string) string {
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s = %q", k, sel[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// names shows a list as a, b and c.
func names(list []string) string {
	switch len(list) {
	case 0:
		return ""
	case 1:
		return list[0]
	}
	return strings.Join(list[:len(list)-1], ", ") + " and " + list[len(list)-1]
}
