// Package poolgen generates large, valid pools for benchmarks and tests.
//
// A generated pool is deterministic for its Options (the same seed gives
// the same bytes) and validates without findings: every lane has two or
// three candidate nodes, its model fits the smallest node's budget, the
// placer puts it on its first candidate under every profile, its port is
// free on each of its candidates, and every pod-pool member has a
// registry port of its own on its host. The pool exercises most of the
// language: node labels and guard overrides, models with args, the three
// residencies (on-demand sometimes left to its default), aliases listed by
// lanes and declared in alias blocks, fallbacks ending in "cloud", two
// profiles (one active, one that cordons a few nodes and overrides lanes),
// a pod pool in the compact member form, a plugin and a state block.
//
// Generate builds the pool as IR, so a test can compare what poolc loads
// with what was generated; Write renders it as HCL or CUE.
package poolgen

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"

	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/schema"
)

// Language is the language Write renders a pool in.
type Language string

// The languages Write knows; their values are the file extensions poolc
// reads them by.
const (
	// HCL writes the pool in HCL.
	HCL Language = "hcl"
	// CUE writes the pool in CUE.
	CUE Language = "cue"
)

// DefaultName is the name of a generated pool whose Options leave Name empty.
const DefaultName = "gen"

// Options says how large a pool to generate and from which seed.
type Options struct {
	// Name is the pool's name; DefaultName when empty.
	Name string
	// Nodes is the number of nodes, at least 2 (a lane lists two or three).
	Nodes int
	// Lanes is the number of lanes, at least 0.
	Lanes int
	// Members is the number of pod-pool members, at least 0; with none the
	// pool has no pod pool, since a pod pool needs members.
	Members int
	// Seed makes the pool: equal Options give equal pools.
	Seed int64
}

// Port ranges. Registries and lanes never share a port, so their rules
// only have to keep ports unique within each range.
const (
	firstRegistryPort = 5000
	lastRegistryPort  = 7999
	firstLanePort     = 8000
	lastLanePort      = 65535
)

// nodeClass is a kind of machine the generator mixes.
type nodeClass struct {
	name     string
	memoryGB float64
	weight   int // in 10ths of the fleet
	reserve  float64
}

// classes are the machines of a generated fleet. The smallest budget is
// 64 - 8 = 56 GB, so every model below fits on every node.
var classes = []nodeClass{
	{name: "spark", memoryGB: 128, weight: 5},
	{name: "mac", memoryGB: 192, weight: 2, reserve: 16},
	{name: "small", memoryGB: 64, weight: 2},
	{name: "big", memoryGB: 256, weight: 1},
}

// catalogue is the models a generated pool declares.
var catalogue = []pools.Model{
	{Name: "deepseek-r1-32b", SizeGB: 20, MemoryGB: 38, Args: []string{"--ctx-size", "16384"}},
	{Name: "gemma-3-12b", SizeGB: 8, MemoryGB: 14},
	{Name: "image-12b", SizeGB: 24, MemoryGB: 40},
	{Name: "llama-3.1-8b", SizeGB: 5, MemoryGB: 9},
	{Name: "mistral-small-24b", SizeGB: 15, MemoryGB: 26},
	{Name: "music-3b", SizeGB: 12, MemoryGB: 35},
	{Name: "phi-4", SizeGB: 9, MemoryGB: 16},
	{Name: "qwen3-27b", SizeGB: 17, MemoryGB: 30, Args: []string{"--ctx-size", "32768"}},
	{Name: "qwen3-coder-30b", SizeGB: 19, MemoryGB: 34},
	{Name: "qwen3-embedding", SizeGB: 8, MemoryGB: 12, Args: []string{"--embedding"}},
	{Name: "reranker", SizeGB: 1, MemoryGB: 3, Args: []string{"--reranking"}},
	{Name: "tts", SizeGB: 4, MemoryGB: 10},
	{Name: "video-14b", SizeGB: 28, MemoryGB: 48},
	{Name: "whisper", SizeGB: 3, MemoryGB: 6},
}

// The profiles of a generated pool.
const (
	activeProfile      = "standard"
	maintenanceProfile = "maintenance"
)

// Generate builds the pool opts describe, as the IR poolc loads it to:
// named elements sorted by name and every schema default filled in.
func Generate(opts Options) (*pools.Pool, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	g := &generator{opts: opts, rnd: rand.New(rand.NewPCG(uint64(opts.Seed), 0x706f6f6c67656e))}
	p := &pools.Pool{
		Name:          opts.Name,
		Guard:         pools.Guard{Ceiling: 0.9, ReserveGB: 8},
		ActiveProfile: activeProfile,
		Plugins:       []pools.Plugin{{Name: "sim", Builtin: true}},
		State:         pools.StateBackend{Backend: "file", Path: "poolc.state.json"},
		Gateway:       pools.DefaultPlugin,
	}
	if p.Name == "" {
		p.Name = DefaultName
	}
	g.nodes(p)
	g.models(p)
	cordoned := g.cordoned()
	if err := g.lanes(p, cordoned); err != nil {
		return nil, err
	}
	g.aliases(p)
	g.profiles(p, cordoned)
	g.podPool(p)
	return p, nil
}

// Write generates the pool opts describe and writes it to w in lang.
func Write(w io.Writer, lang Language, opts Options) error {
	p, err := Generate(opts)
	if err != nil {
		return err
	}
	return Render(w, lang, p, opts.comment())
}

// WriteParts generates the pool opts describe and writes it in lang as
// len(ws) files that poolc loads as one pool (see RenderParts).
func WriteParts(ws []io.Writer, lang Language, opts Options) error {
	if len(ws) == 0 {
		return fmt.Errorf("no files to write the pool in")
	}
	p, err := Generate(opts)
	if err != nil {
		return err
	}
	return RenderParts(ws, lang, p, opts.comment())
}

// Parts generates the pool opts describe in lang as the contents of n
// files (see WriteParts), which poolc loads as one pool, as poolgen
// --files writes them.
func Parts(lang Language, opts Options, n int) ([][]byte, error) {
	if n < 1 {
		return nil, fmt.Errorf("%d files: want 1 or more", n)
	}
	bufs := make([]bytes.Buffer, n)
	ws := make([]io.Writer, n)
	for i := range bufs {
		ws[i] = &bufs[i]
	}
	if err := WriteParts(ws, lang, opts); err != nil {
		return nil, err
	}
	files := make([][]byte, n)
	for i := range bufs {
		files[i] = bufs[i].Bytes()
	}
	return files, nil
}

// comment is the line at the top of a generated file.
func (o Options) comment() string {
	return fmt.Sprintf("Generated by poolgen: %s, %s, %s, seed %d.",
		plural.Count(o.Nodes, "node"), plural.Count(o.Lanes, "lane"), plural.Count(o.Members, "pod-pool member"), o.Seed)
}

func (o Options) check() error {
	if o.Name != "" {
		for _, re := range schema.Root().Field("pool").Spec.Key.Patterns {
			if !re.MatchString(o.Name) {
				return fmt.Errorf("pool name %q: want lowercase letters, digits, '.', '_' and '-', starting and ending with a letter or digit", o.Name)
			}
		}
	}
	switch {
	case o.Nodes < 2:
		return fmt.Errorf("nodes is %d: want at least 2, since every lane lists two or three", o.Nodes)
	case o.Lanes < 0:
		return fmt.Errorf("lanes is %d: want 0 or more", o.Lanes)
	case o.Members < 0:
		return fmt.Errorf("members is %d: want 0 or more", o.Members)
	case o.Members > o.Nodes*(lastRegistryPort-firstRegistryPort+1):
		return fmt.Errorf("%s on %s: want at most %d per node, one registry port each",
			plural.Count(o.Members, "member"), plural.Count(o.Nodes, "node"), lastRegistryPort-firstRegistryPort+1)
	}
	return nil
}

type generator struct {
	opts Options
	rnd  *rand.Rand
}

// name numbers a generated element with enough leading zeros that names
// sort in the order generated.
func name(prefix string, i, count int) string {
	width := len(strconv.Itoa(count))
	return fmt.Sprintf("%s-%0*d", prefix, max(width, 3), i)
}

func (g *generator) nodes(p *pools.Pool) {
	total := 0
	for _, c := range classes {
		total += c.weight
	}
	for i := range g.opts.Nodes {
		pick := g.rnd.IntN(total)
		c := classes[0]
		for _, c = range classes {
			if pick < c.weight {
				break
			}
			pick -= c.weight
		}
		n := pools.Node{
			Name:     name("node", i+1, g.opts.Nodes),
			MemoryGB: c.memoryGB,
			Labels:   map[string]string{"class": c.name, "rack": name("r", i/20+1, g.opts.Nodes/20+1)},
			Guard:    p.Guard,
			Runtime:  pools.DefaultPlugin,
			SSHPort:  pools.DefaultSSHPort,
		}
		n.Address = n.Name + ".lan"
		if c.reserve != 0 {
			n.Guard.ReserveGB = c.reserve
		}
		if c.name == "big" {
			n.KubeContext = "k3d-" + n.Name
		}
		p.Nodes = append(p.Nodes, n)
	}
}

func (g *generator) models(p *pools.Pool) {
	for _, m := range catalogue {
		m.Args = slices.Clone(m.Args)
		m.Path = "/models/" + m.Name + ".gguf"
		m.Source = "nas.lan:/srv/models/" + m.Name + ".gguf"
		m.Declared = true // the file writes memory_gb
		p.Models = append(p.Models, m)
	}
}

// cordoned picks the nodes the maintenance profile cordons: about one in
// fifty, none in a fleet of fewer than four.
func (g *generator) cordoned() map[int]bool {
	out := map[int]bool{}
	n := g.opts.Nodes
	if n < 4 {
		return out
	}
	count := max(1, n/50)
	for i := range count {
		out[(i+1)*n/count-1] = true
	}
	return out
}

// lanes places each lane on two or three nodes so that the placer puts
// every lane on its first candidate under every profile:
//   - the first two candidates are never cordoned, so no profile leaves a
//     lane without a node or pins a keep-warm lane to one node; a third
//     candidate may be cordoned;
//   - the keep-warm and preferred lanes whose first candidate is a node
//     fit its budget together;
//   - the keep-warm lanes among them leave room for the largest model, so
//     any on-demand lane loads beside them on any node.
//
// A keep-warm or preferred lane that finds no first candidate with room
// after a few tries becomes on-demand.
func (g *generator) lanes(p *pools.Pool, cordoned map[int]bool) error {
	var open []int
	for i := range p.Nodes {
		if !cordoned[i] {
			open = append(open, i)
		}
	}
	largest := 0.0
	for _, m := range p.Models {
		largest = max(largest, m.MemoryGB)
	}
	held := make([]float64, len(p.Nodes))     // keep-warm and preferred GB by first candidate
	keepWarm := make([]float64, len(p.Nodes)) // keep-warm GB by first candidate
	room := func(n int, r pools.Residency, gb float64) bool {
		budget := p.Nodes[n].Budget()
		switch r {
		case pools.KeepWarm:
			return keepWarm[n]+gb <= budget-largest && held[n]+gb <= budget
		case pools.Preferred:
			return held[n]+gb <= budget
		}
		return true
	}
	used := make([]map[int]bool, len(p.Nodes)) // node -> ports taken
	for i := range used {
		used[i] = map[int]bool{}
	}
	for i := range g.opts.Lanes {
		m := p.Models[g.rnd.IntN(len(p.Models))]
		l := pools.Lane{Name: name("lane", i+1, g.opts.Lanes), Model: m.Name}
		switch g.rnd.IntN(4) {
		case 0:
			l.Residency = pools.KeepWarm
		case 1:
			l.Residency = pools.Preferred
		default:
			l.Residency = pools.OnDemand
		}
		a := open[g.rnd.IntN(len(open))]
		for try := 0; !room(a, l.Residency, m.MemoryGB); try++ {
			if try == 8 {
				l.Residency = pools.OnDemand
				break
			}
			a = open[g.rnd.IntN(len(open))]
		}
		if l.Residency != pools.OnDemand {
			held[a] += m.MemoryGB
		}
		if l.Residency == pools.KeepWarm {
			keepWarm[a] += m.MemoryGB
		}
		b := a
		for b == a {
			b = open[g.rnd.IntN(len(open))]
		}
		cands := []int{a, b}
		if len(p.Nodes) >= 3 && g.rnd.IntN(2) == 0 {
			c := a
			for c == a || c == b {
				c = g.rnd.IntN(len(p.Nodes))
			}
			cands = append(cands, c)
		}
		l.Port = firstLanePort
		for taken(used, cands, l.Port) {
			l.Port++
		}
		if l.Port > lastLanePort {
			return fmt.Errorf("%s on %s: no port left under %d on node %s", plural.Count(g.opts.Lanes, "lane"), plural.Count(g.opts.Nodes, "node"), lastLanePort, p.Nodes[cands[0]].Name)
		}
		for _, n := range cands {
			used[n][l.Port] = true
			l.Placement = append(l.Placement, p.Nodes[n].Name)
		}
		if i%4 == 0 {
			l.Aliases = []string{name("alias", i/4+1, g.opts.Lanes/4+1)}
		}
		p.Lanes = append(p.Lanes, l)
	}
	return nil
}

func taken(used []map[int]bool, nodes []int, port int) bool {
	for _, n := range nodes {
		if used[n][port] {
			return true
		}
	}
	return false
}

// aliases declares alias blocks: a route to every tenth lane with a lane
// and a cloud fallback, and fallbacks for every other alias a lane lists.
func (g *generator) aliases(p *pools.Pool) {
	for i, l := range p.Lanes {
		if i%4 == 0 {
			a := pools.Alias{Name: l.Aliases[0], Lane: l.Name}
			if i%8 == 0 {
				a.Fallbacks = g.fallbacks(p, i)
			}
			p.Aliases = append(p.Aliases, a)
		}
		if i%10 == 0 {
			p.Aliases = append(p.Aliases, pools.Alias{Name: name("route", i/10+1, len(p.Lanes)/10+1), Lane: l.Name, Fallbacks: g.fallbacks(p, i)})
		}
	}
	sortAliases(p.Aliases)
}

// fallbacks returns another lane, when there is one, then "cloud".
func (g *generator) fallbacks(p *pools.Pool, own int) []string {
	if len(p.Lanes) < 2 {
		return []string{pools.Cloud}
	}
	other := own
	for other == own {
		other = g.rnd.IntN(len(p.Lanes))
	}
	return []string{p.Lanes[other].Name, pools.Cloud}
}

// sortAliases sorts aliases by name, as the decoder does. Every "alias-"
// name sorts before every "route-" name and each family is generated in
// order, so a stable partition is enough.
func sortAliases(as []pools.Alias) {
	var alias, route []pools.Alias
	for _, a := range as {
		if a.Name < "route" {
			alias = append(alias, a)
		} else {
			route = append(route, a)
		}
	}
	copy(as, append(alias, route...))
}

// profiles declares the active profile, which changes nothing, and a
// maintenance profile that cordons nodes, makes every 25th lane on-demand,
// and every 40th on-demand with its placement reversed. An on-demand lane
// loads beside the keep-warm lanes of any node, so each still places.
func (g *generator) profiles(p *pools.Pool, cordoned map[int]bool) {
	maint := pools.Profile{Name: maintenanceProfile}
	for i, n := range p.Nodes {
		if cordoned[i] {
			maint.Cordon = append(maint.Cordon, n.Name)
		}
	}
	for i, l := range p.Lanes {
		var o pools.LaneOverride
		if (i%25 == 0 || i%40 == 0) && l.Residency != pools.OnDemand {
			o.Residency = pools.OnDemand
		}
		if i%40 == 0 {
			o.Placement = slices.Clone(l.Placement)
			slices.Reverse(o.Placement)
		}
		if o.Residency != "" || o.Placement != nil {
			o.Lane = l.Name
			maint.Lanes = append(maint.Lanes, o)
		}
	}
	p.Profiles = []pools.Profile{maint, {Name: activeProfile}}
}

// podPool declares one pod pool whose members run on the nodes in turn,
// each with a registry of its own on a port no other member of its host
// uses, its image synced by the sim.
func (g *generator) podPool(p *pools.Pool) {
	if g.opts.Members == 0 {
		return
	}
	pp := pools.PodPool{Name: "harness", Image: "registry.lan/harness:1.4", Namespace: "harness", PodMemoryGB: 4,
		Cluster: pools.DefaultPlugin, ImageSync: pools.DefaultPlugin}
	next := map[string]int{} // host -> next registry port
	for i := range g.opts.Members {
		host := p.Nodes[i%len(p.Nodes)].Address
		if next[host] == 0 {
			next[host] = firstRegistryPort
		}
		pp.Members = append(pp.Members, pools.Member{
			Context:  name("k3d-pool", i+1, g.opts.Members),
			SSHHost:  host,
			Capacity: 1 + g.rnd.IntN(8),
			Registry: pools.Registry{Name: name("k3d-registry", i+1, g.opts.Members), Port: next[host]},
		})
		next[host]++
	}
	p.PodPools = []pools.PodPool{pp}
}
