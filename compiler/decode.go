package compiler

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"poolc.dev/poolc/compiler/podspec"
	"poolc.dev/poolc/compiler/tree"
	"poolc.dev/poolc/pools"
)

// decode reads a schema-checked tree into the IR. It records where every
// attribute was written in the returned SourceMap and reports the findings
// that need more than one field to see: several pools, members that do not
// parse, aliases claimed twice.
func decode(doc *tree.Value) (*pools.Pool, pools.SourceMap, pools.Diagnostics) {
	var d decoder
	d.sm = pools.SourceMap{}
	poolsObj := doc.Get("pool")
	if poolsObj == nil || poolsObj.Kind != tree.Object {
		return nil, d.sm, d.diags // the schema check reported it
	}
	if len(poolsObj.Fields) == 0 {
		// pool = {} in HCL or pool: {} in CUE: the field is there, but no pool.
		d.diags.ErrorAt("no-pool", fieldPos(doc, "pool"), `no pool is declared: write pool "NAME" { ... } (HCL) or pool: "NAME": { ... } (CUE)`)
		return nil, d.sm, d.diags
	}
	for _, extra := range poolsObj.Fields[1:] {
		d.diags.ErrorAt("several-pools", extra.KeyPos, "pool %q is declared beside pool %q (at %s); the files of one configuration declare one pool", extra.Key, poolsObj.Fields[0].Key, poolsObj.Fields[0].KeyPos)
	}
	first := poolsObj.Fields[0]
	// A finding about something the files leave to a default (the
	// guard's reserve) points at the pool.
	d.sm.Set(pools.Path{}, first.KeyPos)
	d.sm.Add(positions{first.Value})
	p := d.pool(first.Key, first.Value)
	d.sensitiveOutsideConfig(first.Value)
	return p, d.sm, d.diags
}

// sensitiveOutsideConfig refuses a value marked sensitive anywhere but in
// a plugin's config, where poolc redacts it: elsewhere (a model's source,
// a lane's args) it would be printed, in plans and the state, all the same.
func (d *decoder) sensitiveOutsideConfig(pool *tree.Value) {
	var walk func(v *tree.Value)
	walk = func(v *tree.Value) {
		switch {
		case v == nil:
		case v.Sensitive:
			d.diags.ErrorAt("sensitive-misplaced", v.Pos, "only values in a plugin's config block may be marked sensitive (poolc redacts those): this one would be printed in plans and the state all the same; move the secret into the plugin's config or its environment")
		default:
			for _, item := range v.Items {
				walk(item)
			}
			for _, f := range v.Fields {
				walk(f.Value)
			}
		}
	}
	for _, f := range pool.Fields {
		if f.Key != "plugin" {
			walk(f.Value)
			continue
		}
		for _, pl := range f.Value.Fields {
			for _, pf := range pl.Value.Fields {
				if pf.Key != "config" {
					walk(pf.Value)
				}
			}
		}
	}
}

type decoder struct {
	sm    pools.SourceMap
	diags pools.Diagnostics
}

// positions finds where each attribute under a document was written (a
// pools.Locator): a named entry at its name, anything else at its value.
// Where a key is given twice, the last one's position is found.
type positions struct{ doc *tree.Value }

// Locate returns the position of path p under the document.
func (t positions) Locate(p pools.Path) (pools.Pos, bool) { return locate(t.doc, p) }

func locate(v *tree.Value, p pools.Path) (pools.Pos, bool) {
	if len(p) == 0 {
		return pools.Pos{}, false
	}
	switch v.Kind {
	case tree.Object:
		for i := len(v.Fields) - 1; i >= 0; i-- {
			f := v.Fields[i]
			if f.Key != p[0] {
				continue
			}
			if len(p) > 1 {
				if pos, ok := locate(f.Value, p[1:]); ok {
					return pos, true
				}
				continue
			}
			pos := f.Value.Pos
			if f.Value.Kind == tree.Object && !f.KeyPos.IsZero() {
				pos = f.KeyPos
			}
			if !pos.IsZero() {
				return pos, true
			}
		}
	case tree.List:
		i, err := strconv.Atoi(p[0])
		if err != nil || i < 0 || i >= len(v.Items) || strconv.Itoa(i) != p[0] {
			return pools.Pos{}, false
		}
		if len(p) == 1 {
			return v.Items[i].Pos, true
		}
		return locate(v.Items[i], p[1:])
	}
	return pools.Pos{}, false
}

func (d *decoder) pool(name string, v *tree.Value) *pools.Pool {
	p := &pools.Pool{Name: name, ActiveProfile: v.StringAt("active_profile")}
	p.Guard = guard(v.Get("guard"), pools.Guard{})
	nodes := entries(v, "node")
	p.Nodes = slices.Grow(p.Nodes, len(nodes))
	for _, e := range nodes {
		p.Nodes = append(p.Nodes, pools.Node{
			Name:        e.Key,
			Address:     e.Value.StringAt("address"),
			MemoryGB:    e.Value.NumberAt("memory_gb"),
			Labels:      strMap(e.Value.Get("labels")),
			KubeContext: e.Value.StringAt("kube_context"),
			Guard:       guard(e.Value.Get("guard"), p.Guard),
			Runtime:     e.Value.StringAt("runtime"),
			SSHUser:     e.Value.StringAt("ssh_user"),
			SSHPort:     int(e.Value.NumberAt("ssh_port")),

			LoadHeadroomGB:  e.Value.NumberAt("load_headroom_gb"),
			GPUWorkingSetGB: e.Value.NumberAt("gpu_working_set_gb"),
		})
	}
	for _, e := range entries(v, "model") {
		p.Models = append(p.Models, pools.Model{
			Name:     e.Key,
			Path:     e.Value.StringAt("path"),
			Source:   e.Value.StringAt("source"),
			SHA256:   e.Value.StringAt("sha256"),
			SizeGB:   e.Value.NumberAt("size_gb"),
			MemoryGB: e.Value.NumberAt("memory_gb"),
			Declared: e.Value.Get("memory_gb") != nil,
			Args:     strs(e.Value.Get("args")),
		})
	}
	lanes := entries(v, "lane")
	p.Lanes = slices.Grow(p.Lanes, len(lanes))
	for _, e := range lanes {
		p.Lanes = append(p.Lanes, pools.Lane{
			Name:      e.Key,
			Model:     e.Value.StringAt("model"),
			Residency: pools.Residency(e.Value.StringAt("residency")),
			Aliases:   strs(e.Value.Get("aliases")),
			Placement: strs(e.Value.Get("placement")),
			Selector:  strMap(e.Value.Get("selector")),
			Port:      int(e.Value.NumberAt("port")),
		})
	}
	p.Aliases = d.aliases(v, p.Lanes)
	for _, e := range entries(v, "profile") {
		pr := pools.Profile{Name: e.Key, Cordon: strs(e.Value.Get("cordon"))}
		for _, o := range entries(e.Value, "lane") {
			pr.Lanes = append(pr.Lanes, pools.LaneOverride{
				Lane:      o.Key,
				Residency: pools.Residency(o.Value.StringAt("residency")),
				Placement: strs(o.Value.Get("placement")),
				Selector:  strMap(o.Value.Get("selector")),
			})
		}
		p.Profiles = append(p.Profiles, pr)
	}
	for _, e := range entries(v, "pod_pool") {
		pp := pools.PodPool{
			Name:        e.Key,
			Image:       e.Value.StringAt("image"),
			Namespace:   e.Value.StringAt("namespace"),
			PodMemoryGB: e.Value.NumberAt("pod_memory_gb"),
			Members:     d.members(e.Key, e.Value),
			Cluster:     e.Value.StringAt("cluster"),
			ImageSync:   e.Value.StringAt("image_sync"),
		}
		if pp.Namespace == "" {
			pp.Namespace = e.Key
		}
		p.PodPools = append(p.PodPools, pp)
	}
	for _, e := range entries(v, "plugin") {
		cfg, _ := plain(e.Value.Get("config")).(map[string]any)
		p.Plugins = append(p.Plugins, pools.Plugin{
			Name:      e.Key,
			Builtin:   boolean(e.Value, "builtin"),
			Path:      e.Value.StringAt("path"),
			SHA256:    e.Value.StringAt("sha256"),
			Config:    cfg,
			Sensitive: tree.SensitivePaths(e.Value.Get("config")),
		})
	}
	p.Gateway = v.Get("gateway").StringAt("plugin")
	if st := v.Get("state"); st != nil {
		p.State = pools.StateBackend{
			Backend: st.StringAt("backend"), Path: st.StringAt("path"),
			Endpoints: strs(st.Get("endpoints")), Prefix: st.StringAt("prefix"),
			LeaseTTLSeconds: int(st.NumberAt("lease_ttl")),
		}
		if t := st.Get("tls"); t != nil {
			p.State.TLS = pools.StateTLS{CA: t.StringAt("ca"), Cert: t.StringAt("cert"), Key: t.StringAt("key")}
		}
	}
	return p
}

// aliases resolves each alias to its lane, from its alias block or from the
// lane that lists it, and reports aliases claimed twice or by no lane.
func (d *decoder) aliases(v *tree.Value, lanes []pools.Lane) []pools.Alias {
	byName := map[string]*pools.Alias{}
	claimedBy := map[string]string{}
	var out []*pools.Alias
	for _, e := range entries(v, "alias") {
		a := &pools.Alias{Name: e.Key, Lane: e.Value.StringAt("lane"), Fallbacks: strs(e.Value.Get("fallbacks"))}
		byName[a.Name] = a
		out = append(out, a)
	}
	for _, l := range lanes {
		for i, name := range l.Aliases {
			path := pools.Path{"lane", l.Name, "aliases", strconv.Itoa(i)}
			if other, ok := claimedBy[name]; ok {
				d.diags.Errorf("alias-conflict", path, "alias %q is listed by lanes %q and %q; an alias routes to one lane", name, other, l.Name)
				continue
			}
			claimedBy[name] = l.Name
			a, ok := byName[name]
			switch {
			case !ok:
				a = &pools.Alias{Name: name, Lane: l.Name}
				byName[name] = a
				out = append(out, a)
			case a.Lane == "":
				a.Lane = l.Name
			case a.Lane != l.Name:
				d.diags.Errorf("alias-conflict", path, "lane %q lists alias %q, but the alias block routes it to lane %q", l.Name, name, a.Lane)
			}
		}
	}
	res := make([]pools.Alias, 0, len(out))
	for _, a := range out {
		if a.Lane == "" {
			d.diags.Errorf("alias-unrouted", pools.Path{"alias", a.Name}, "alias %q routes to no lane: name its lane in the alias, or list the alias in a lane's aliases", a.Name)
		}
		res = append(res, *a)
	}
	sort.Slice(res, func(i, j int) bool { return res[i].Name < res[j].Name })
	return res
}

// members reads a pod pool's member blocks, in priority order; a compact
// members list has been turned into blocks (compactMembers).
func (d *decoder) members(pool string, v *tree.Value) []pools.Member {
	m := v.Get("member")
	switch {
	case m == nil:
		d.diags.Errorf("no-members", pools.Path{"pod_pool", pool}, "pod_pool %q has no members: set members = \"%s\"", pool, podspec.Syntax)
		return nil
	case m.Kind != tree.Object:
		return nil // reported already
	case len(m.Fields) == 0:
		d.diags.Errorf("no-members", pools.Path{"pod_pool", pool}, "pod_pool %q has no members: set members = \"%s\"", pool, podspec.Syntax)
		return nil
	}
	var out []pools.Member
	for _, b := range m.Fields { // in the order written: earlier is higher priority
		d.sm.Set(pools.MemberPath(pool, len(out)), b.KeyPos)
		mem := pools.Member{Context: b.Key, SSHHost: b.Value.StringAt("ssh_host"), SSHPort: int(b.Value.NumberAt("ssh_port")),
			Capacity: int(b.Value.NumberAt("capacity"))}
		if r := b.Value.StringAt("registry"); r != "" {
			reg, err := podspec.ParseRegistry(r)
			if err != nil {
				d.diags.Errorf("bad-member", pools.Path{"pod_pool", pool, "member", b.Key, "registry"}, "pod_pool %q: member %q: %v", pool, b.Key, err)
			}
			mem.Registry = reg
		}
		out = append(out, mem)
	}
	return out
}

// quotedItems writes a comma-separated member list as list items.
func quotedItems(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		parts[i] = strconv.Quote(strings.TrimSpace(p))
	}
	return strings.Join(parts, ", ")
}

// stringPos is the position of byte off inside a string literal at p
// (p is the opening quote).
func stringPos(p pools.Pos, off int) pools.Pos {
	if p.IsZero() {
		return p
	}
	p.Col += 1 + off
	return p
}

func entries(v *tree.Value, key string) []*tree.Field {
	m := v.Get(key)
	if m == nil || m.Kind != tree.Object {
		return nil
	}
	out := append([]*tree.Field(nil), m.Fields...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func guard(v *tree.Value, base pools.Guard) pools.Guard {
	if v == nil {
		return base
	}
	g := base
	if c := v.Get("ceiling"); c != nil {
		g.Ceiling = c.Num
	}
	if r := v.Get("reserve_gb"); r != nil {
		g.ReserveGB = r.Num
	}
	return g
}

func boolean(v *tree.Value, key string) bool {
	if f := v.Get(key); f != nil {
		return f.Bool
	}
	return false
}

func strs(v *tree.Value) []string {
	if v == nil {
		return nil
	}
	out := make([]string, len(v.Items))
	for i, item := range v.Items {
		out[i] = item.Str
	}
	return out
}

func strMap(v *tree.Value) map[string]string {
	if v == nil || len(v.Fields) == 0 {
		return nil
	}
	out := make(map[string]string, len(v.Fields))
	for _, f := range v.Fields {
		out[f.Key] = f.Value.Str
	}
	return out
}

// plain turns a free-form value (plugin config) into Go maps, slices and
// scalars.
func plain(v *tree.Value) any {
	if v == nil {
		return nil
	}
	switch v.Kind {
	case tree.Object:
		m := make(map[string]any, len(v.Fields))
		for _, f := range v.Fields {
			m[f.Key] = plain(f.Value)
		}
		return m
	case tree.List:
		l := make([]any, len(v.Items))
		for i, item := range v.Items {
			l[i] = plain(item)
		}
		return l
	case tree.String:
		return v.Str
	case tree.Number:
		return v.Num
	case tree.Bool:
		return v.Bool
	}
	return nil
}
