package poolgen

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"poolc.dev/poolc/compiler/podspec"
	"poolc.dev/poolc/pools"
)

// The pool is first laid out as a small document of attributes and
// blocks, then printed in one language. HCL writes each named entry as a
// labelled block (node "a" { ... }); CUE gathers the entries of one kind
// into one struct (node: { "a": { ... } }).

// doc is the body of a block: attributes and blocks in the order written.
type doc struct {
	items []item
}

// item is an attribute (val set) or a block (body set). A named block is
// an entry of a map such as node or lane, keyed by label.
type item struct {
	key   string
	label string
	named bool
	val   *value
	body  *doc
}

// value is an attribute's value: a string, number, bool, list of strings
// or map of strings.
type value struct {
	str   *string
	num   *float64
	boolv *bool
	list  []string
	dict  map[string]string
}

func (d *doc) attr(key string, v value)             { d.items = append(d.items, item{key: key, val: &v}) }
func (d *doc) str(key, s string)                    { d.attr(key, value{str: &s}) }
func (d *doc) num(key string, n float64)            { d.attr(key, value{num: &n}) }
func (d *doc) boolean(key string, b bool)           { d.attr(key, value{boolv: &b}) }
func (d *doc) list(key string, l []string)          { d.attr(key, value{list: l}) }
func (d *doc) dict(key string, m map[string]string) { d.attr(key, value{dict: m}) }

func (d *doc) block(key string) *doc {
	b := &doc{}
	d.items = append(d.items, item{key: key, body: b})
	return b
}

func (d *doc) entry(key, label string) *doc {
	b := &doc{}
	d.items = append(d.items, item{key: key, label: label, named: true, body: b})
	return b
}

// layout lays out a pool. It writes what the IR holds, leaving out what
// the schema or the decoder would fill in the same way: the residency of
// every other on-demand lane, a pod pool's namespace when it is its name,
// node guard values equal to the pool's.
func layout(p *pools.Pool) *doc {
	top := &doc{}
	pool := top.entry("pool", p.Name)
	g := pool.block("guard")
	g.num("ceiling", p.Guard.Ceiling)
	g.num("reserve_gb", p.Guard.ReserveGB)
	for _, n := range p.Nodes {
		b := pool.entry("node", n.Name)
		b.str("address", n.Address)
		b.num("memory_gb", n.MemoryGB)
		if n.Labels != nil {
			b.dict("labels", n.Labels)
		}
		if n.KubeContext != "" {
			b.str("kube_context", n.KubeContext)
		}
		if n.Guard != p.Guard {
			ng := b.block("guard")
			if n.Guard.Ceiling != p.Guard.Ceiling {
				ng.num("ceiling", n.Guard.Ceiling)
			}
			if n.Guard.ReserveGB != p.Guard.ReserveGB {
				ng.num("reserve_gb", n.Guard.ReserveGB)
			}
		}
	}
	for _, m := range p.Models {
		b := pool.entry("model", m.Name)
		b.str("path", m.Path)
		if m.Source != "" {
			b.str("source", m.Source)
		}
		b.num("size_gb", m.SizeGB)
		b.num("memory_gb", m.MemoryGB)
		if m.Args != nil {
			b.list("args", m.Args)
		}
	}
	listed := map[string]string{} // alias -> the lane that lists it
	onDemand := 0
	for _, l := range p.Lanes {
		b := pool.entry("lane", l.Name)
		b.str("model", l.Model)
		if l.Residency == pools.OnDemand {
			onDemand++
		}
		if l.Residency != pools.OnDemand || onDemand%2 == 0 {
			b.str("residency", string(l.Residency))
		}
		if l.Aliases != nil {
			b.list("aliases", l.Aliases)
		}
		for _, a := range l.Aliases {
			listed[a] = l.Name
		}
		if l.Placement != nil {
			b.list("placement", l.Placement)
		}
		if l.Selector != nil {
			b.dict("selector", l.Selector)
		}
		b.num("port", float64(l.Port))
	}
	for _, a := range p.Aliases {
		byLane := listed[a.Name] == a.Lane
		if byLane && a.Fallbacks == nil {
			continue // the lane's aliases list says it all
		}
		b := pool.entry("alias", a.Name)
		if !byLane {
			b.str("lane", a.Lane)
		}
		if a.Fallbacks != nil {
			b.list("fallbacks", a.Fallbacks)
		}
	}
	for _, pr := range p.Profiles {
		b := pool.entry("profile", pr.Name)
		if pr.Cordon != nil {
			b.list("cordon", pr.Cordon)
		}
		for _, o := range pr.Lanes {
			ob := b.entry("lane", o.Lane)
			if o.Residency != "" {
				ob.str("residency", string(o.Residency))
			}
			if o.Placement != nil {
				ob.list("placement", o.Placement)
			}
			if o.Selector != nil {
				ob.dict("selector", o.Selector)
			}
		}
	}
	if p.ActiveProfile != "" {
		pool.str("active_profile", p.ActiveProfile)
	}
	for _, pp := range p.PodPools {
		b := pool.entry("pod_pool", pp.Name)
		b.str("image", pp.Image)
		if pp.Namespace != pp.Name {
			b.str("namespace", pp.Namespace)
		}
		if pp.PodMemoryGB != 0 {
			b.num("pod_memory_gb", pp.PodMemoryGB)
		}
		b.str("members", podspec.Format(pp.Members))
		if pp.ImageSync != "" {
			b.str("image_sync", pp.ImageSync)
		}
	}
	for _, pl := range p.Plugins {
		b := pool.entry("plugin", pl.Name)
		if pl.Builtin {
			b.boolean("builtin", true)
		}
		if pl.Path != "" {
			b.str("path", pl.Path)
		}
		if pl.SHA256 != "" {
			b.str("sha256", pl.SHA256)
		}
	}
	st := pool.block("state")
	st.str("backend", p.State.Backend)
	st.str("path", p.State.Path)
	return top
}

// Render writes a pool (generated, then perhaps changed) in lang, with a
// comment at the top.
func Render(w io.Writer, lang Language, p *pools.Pool, comment string) error {
	return printDoc(w, lang, layout(p), comment)
}

// RenderParts writes a pool in lang as parts files that poolc loads as
// one pool, each in a writer of ws (len(ws) parts): every file holds a
// block of the pool's name, the first with the pool's settings, and the
// named entries (nodes, models, lanes, aliases, ...) are cut into
// len(ws) runs of about equal length, in order, one run per file. A pool
// too large for one file's bound (hclfront.MaxTokens) is read this way.
func RenderParts(ws []io.Writer, lang Language, p *pools.Pool, comment string) error {
	top := layout(p)
	pool := top.items[0]
	var settings, entries []item
	for _, it := range pool.body.items {
		if it.named {
			entries = append(entries, it)
		} else {
			settings = append(settings, it)
		}
	}
	for i, w := range ws {
		part := entries[len(entries)*i/len(ws) : len(entries)*(i+1)/len(ws)]
		body := &doc{items: slices.Clip(part)}
		if i == 0 {
			body.items = append(slices.Clip(settings), part...)
		}
		file := &doc{items: []item{{key: pool.key, label: pool.label, named: true, body: body}}}
		if err := printDoc(w, lang, file, fmt.Sprintf("%s Part %d of %d.", comment, i+1, len(ws))); err != nil {
			return err
		}
	}
	return nil
}

// printDoc writes a laid-out document in lang, with a comment at the top.
func printDoc(w io.Writer, lang Language, d *doc, comment string) error {
	pr := &printer{w: bufio.NewWriter(w), lang: lang}
	switch lang {
	case HCL:
		pr.printf("# %s\n", comment)
	case CUE:
		pr.printf("// %s\n\npackage pool\n\n", comment)
	default:
		return fmt.Errorf("unknown language %q: want hcl or cue", lang)
	}
	pr.body(d, 0)
	return pr.w.Flush()
}

type printer struct {
	w    *bufio.Writer
	lang Language
}

func (pr *printer) printf(format string, args ...any) { fmt.Fprintf(pr.w, format, args...) }

func (pr *printer) indent(depth int) {
	for range depth {
		if pr.lang == HCL {
			pr.w.WriteString("  ")
		} else {
			pr.w.WriteString("\t")
		}
	}
}

// body prints the items of d at depth, aligning the values of each run of
// attributes as hclfmt and cue fmt do.
func (pr *printer) body(d *doc, depth int) {
	for i := 0; i < len(d.items); {
		it := d.items[i]
		switch {
		case it.val != nil:
			j := i
			width := 0
			for ; j < len(d.items) && d.items[j].val != nil; j++ {
				width = max(width, len(d.items[j].key))
			}
			for _, a := range d.items[i:j] {
				pr.attr(a, width, depth)
			}
			i = j
		case it.named && pr.lang == CUE:
			j := i
			for j < len(d.items) && d.items[j].named && d.items[j].key == it.key {
				j++
			}
			pr.group(d.items[i:j], depth)
			i = j
		default:
			pr.indent(depth)
			pr.w.WriteString(it.key)
			if pr.lang == CUE {
				pr.w.WriteString(":")
			}
			if it.named {
				pr.w.WriteString(" " + quote(it.label, pr.lang))
			}
			pr.open(it.body, depth)
			i++
		}
	}
}

// group prints CUE map entries of one kind: key: "label": { ... } for a
// single entry, else key: { "a": { ... }, "b": { ... } }.
func (pr *printer) group(entries []item, depth int) {
	pr.indent(depth)
	if len(entries) == 1 {
		pr.printf("%s: %s:", entries[0].key, quote(entries[0].label, CUE))
		pr.open(entries[0].body, depth)
		return
	}
	pr.printf("%s: {\n", entries[0].key)
	for _, e := range entries {
		pr.indent(depth + 1)
		pr.printf("%s:", quote(e.label, CUE))
		pr.open(e.body, depth+1)
	}
	pr.indent(depth)
	pr.w.WriteString("}\n")
}

// open prints " { body }" after a block's head.
func (pr *printer) open(d *doc, depth int) {
	if len(d.items) == 0 {
		pr.w.WriteString(" {}\n")
		return
	}
	pr.w.WriteString(" {\n")
	pr.body(d, depth+1)
	pr.indent(depth)
	pr.w.WriteString("}\n")
}

func (pr *printer) attr(a item, width, depth int) {
	pr.indent(depth)
	pr.w.WriteString(a.key)
	if pr.lang == HCL {
		pr.w.WriteString(strings.Repeat(" ", width-len(a.key)) + " = ")
	} else {
		pr.w.WriteString(":" + strings.Repeat(" ", width-len(a.key)) + " ")
	}
	pr.value(*a.val)
	pr.w.WriteString("\n")
}

func (pr *printer) value(v value) {
	switch {
	case v.str != nil:
		pr.w.WriteString(quote(*v.str, pr.lang))
	case v.num != nil:
		pr.w.WriteString(strconv.FormatFloat(*v.num, 'f', -1, 64))
	case v.boolv != nil:
		pr.w.WriteString(strconv.FormatBool(*v.boolv))
	case v.list != nil:
		pr.w.WriteString("[")
		for i, s := range v.list {
			if i > 0 {
				pr.w.WriteString(", ")
			}
			pr.w.WriteString(quote(s, pr.lang))
		}
		pr.w.WriteString("]")
	default:
		keys := make([]string, 0, len(v.dict))
		for k := range v.dict {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		sep, open, close := " = ", "{ ", " }"
		if pr.lang == CUE {
			sep, open, close = ": ", "{", "}"
		}
		pr.w.WriteString(open)
		for i, k := range keys {
			if i > 0 {
				pr.w.WriteString(", ")
			}
			pr.w.WriteString(key(k, pr.lang) + sep + quote(v.dict[k], pr.lang))
		}
		pr.w.WriteString(close)
	}
}

// key writes an object key: bare when it is a plain identifier, quoted
// otherwise.
func key(k string, lang Language) string {
	if !isIdent(k) || lang == CUE && cueKeywords[k] {
		return quote(k, lang)
	}
	return k
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || r != '_' && (r < '0' || r > '9')) {
			return false
		}
	}
	return true
}

var cueKeywords = map[string]bool{"if": true, "for": true, "in": true, "let": true, "true": true, "false": true, "null": true, "package": true, "import": true}

// quote writes a string literal both languages read alike: quotes,
// backslashes and control characters escaped, and in HCL the template
// openers ${ and %{ doubled so they stay literal.
func quote(s string, lang Language) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		case lang == HCL && (r == '$' || r == '%') && strings.HasPrefix(s[i+1:], "{"):
			b.WriteRune(r)
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
