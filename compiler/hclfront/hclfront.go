// Package hclfront reads pool files written in HCL into the positioned
// value tree the schema check and the decoder share.
//
// Blocks become objects: a block whose schema field is keyed by name
// (node, lane, ...) takes one label, its name; a plain block (guard, state)
// takes none. Attribute values are HCL expressions without variables or
// functions: literals, lists and objects.
package hclfront

import (
	"fmt"
	"math"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"poolc.dev/poolc/compiler/numlit"
	"poolc.dev/poolc/compiler/tree"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/schema"
)

// Parse reads one pool file into a tree. It reports syntax errors and the
// block shapes the tree cannot express (a missing label, a duplicate
// block); everything else is left to the schema check.
func Parse(filename string, src []byte) (*tree.Value, pools.Diagnostics) {
	return ParseAs(filename, src, schema.Root())
}

// ParseAs reads one HCL file whose top level root describes (a pool file,
// a scenario file) into a tree; root says which blocks take a label.
func ParseAs(filename string, src []byte, root *schema.Spec) (*tree.Value, pools.Diagnostics) {
	var diags pools.Diagnostics
	// The size first: measuring the nesting may lex the whole file.
	if d := tooBig(filename, src, MaxTokens); d != nil {
		return nil, append(diags, *d)
	}
	if at, deep := tooDeep(filename, src); deep {
		diags.ErrorAt("too-deep", at, "nested too deeply: poolc reads at most %d levels of brackets, blocks and operators", tree.MaxNesting)
		return nil, diags
	}
	body, hdiags := parseBody(filename, src)
	addHCL(&diags, hdiags)
	if hdiags.HasErrors() {
		return nil, diags
	}
	r := &reader{diags: diags, src: src, entries: map[*tree.Value]map[string]pools.Pos{}}
	v := r.body(body, root)
	return v, r.diags
}

type reader struct {
	diags pools.Diagnostics
	src   []byte
	// entries holds, for each object of named blocks (node, lane, ...),
	// where each name was first declared, so a duplicate is found without
	// rescanning the object: a pool declares thousands of lanes.
	entries map[*tree.Value]map[string]pools.Pos
}

func pos(p hcl.Pos, file string) pools.Pos {
	return pools.Pos{File: file, Line: p.Line, Col: p.Column}
}

func rangePos(r hcl.Range) pools.Pos { return pos(r.Start, r.Filename) }

func addHCL(ds *pools.Diagnostics, hd hcl.Diagnostics) {
	for _, d := range hd {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		p := pools.Pos{}
		if d.Subject != nil {
			p = rangePos(*d.Subject)
		}
		ds.ErrorAt("syntax", p, "%s", msg)
	}
}

// body turns a block body into an object; s is the schema of the object,
// or nil where the schema has nothing to say (an unknown block).
func (r *reader) body(b *hclsyntax.Body, s *schema.Spec) *tree.Value {
	obj := &tree.Value{Kind: tree.Object, Pos: rangePos(b.SrcRange)}
	seen := make(map[string]pools.Pos, len(b.Attributes))
	obj.Fields = make([]*tree.Field, 0, len(b.Attributes)+len(b.Blocks))
	fields := make([]tree.Field, len(b.Attributes)) // the attributes' fields, allocated at once
	for i, a := range sortedAttributes(b) {
		seen[a.Name] = rangePos(a.NameRange)
		var val *tree.Value
		if r.literal(a.Expr) {
			val = r.expr(a.Expr)
		} else {
			val = &tree.Value{Kind: tree.Invalid, Pos: rangePos(a.Expr.Range())}
		}
		fields[i] = tree.Field{Key: a.Name, KeyPos: rangePos(a.NameRange), Value: val}
		obj.Fields = append(obj.Fields, &fields[i])
	}
	for _, blk := range b.Blocks {
		r.block(obj, blk, s, seen)
	}
	return obj
}

// sortedAttributes returns a body's attributes in source order; hclsyntax
// keeps them in a map.
func sortedAttributes(b *hclsyntax.Body) []*hclsyntax.Attribute {
	out := make([]*hclsyntax.Attribute, 0, len(b.Attributes))
	for _, a := range b.Attributes {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *hclsyntax.Attribute) int { return a.SrcRange.Start.Byte - b.SrcRange.Start.Byte })
	return out
}

// literal checks an attribute's expression before it is evaluated and
// reports whether it may be: its numbers must be spelt as numlit allows,
// and it must hold no for expression (nor template for directive, which
// HCL parses as one). Without variables and functions, what is left of
// HCL evaluates to a value no larger than its source; a for expression
// inside another multiplies, and a few lines could fill memory.
//
// The common shapes (a quoted string, a number, a list of them) are checked
// directly; anything else is walked whole.
func (r *reader) literal(e hclsyntax.Expression) bool {
	switch e := e.(type) {
	case *hclsyntax.TemplateExpr:
		if e.IsStringLiteral() {
			return true
		}
	case *hclsyntax.LiteralValueExpr:
		return r.number(e)
	case *hclsyntax.TupleConsExpr:
		ok := true
		for _, item := range e.Exprs {
			ok = r.literal(item) && ok
		}
		return ok
	}
	ok := true
	hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		switch n := n.(type) {
		case *hclsyntax.ForExpr:
			r.diags.ErrorAt("not-literal", rangePos(n.SrcRange), "for expressions are not read in pool files: write the list or object out, or generate it with CUE")
			ok = false
		case *hclsyntax.LiteralValueExpr:
			ok = r.number(n) && ok
		}
		return nil
	})
	return ok
}

// number checks that a number literal is spelt as numlit allows; it
// reports whether n is no number or a number spelt so.
func (r *reader) number(n *hclsyntax.LiteralValueExpr) bool {
	if n.Val.Type() != cty.Number {
		return true
	}
	rng := n.SrcRange
	if rng.Start.Byte < 0 || rng.End.Byte > len(r.src) || rng.Start.Byte > rng.End.Byte {
		return true
	}
	if err := numlit.Check(string(r.src[rng.Start.Byte:rng.End.Byte])); err != nil {
		r.diags.ErrorAt("syntax", rangePos(rng), "%v", err)
		return false
	}
	return true
}

func (r *reader) block(obj *tree.Value, blk *hclsyntax.Block, parent *schema.Spec, seen map[string]pools.Pos) {
	var fs *schema.Spec
	if parent != nil && parent.Kinds&schema.KindStruct != 0 {
		if f := parent.Field(blk.Type); f != nil {
			fs = f.Spec
		}
	}
	typePos := rangePos(blk.TypeRange)
	switch {
	case fs == nil || fs.Kinds == schema.KindAny:
		// Unknown to the schema or free-form (plugin config): keep every
		// label as a level of nesting and let the schema check speak.
		if r.duplicate(blk.Type, typePos, seen) {
			return
		}
		obj.Fields = append(obj.Fields, &tree.Field{Key: blk.Type, KeyPos: typePos, Value: r.nested(blk, blk.Labels, nil)})
	case fs.Kinds&schema.KindMap != 0:
		if len(blk.Labels) != 1 {
			r.diags.ErrorAt("block-labels", typePos, "%s block needs exactly one label, its name: %s \"NAME\" { ... }", blk.Type, blk.Type)
			return
		}
		m := obj.Get(blk.Type)
		if m == nil {
			if r.duplicate(blk.Type, typePos, seen) {
				return
			}
			m = &tree.Value{Kind: tree.Object, Pos: typePos}
			obj.Fields = append(obj.Fields, &tree.Field{Key: blk.Type, KeyPos: typePos, Value: m})
		}
		name := blk.Labels[0]
		namePos := rangePos(blk.LabelRanges[0])
		declared := r.entries[m]
		if declared == nil {
			declared = map[string]pools.Pos{}
			r.entries[m] = declared
		}
		if first, ok := declared[name]; ok {
			r.diags.ErrorAt("duplicate", typePos, "%s %q is declared twice; first at %s", blk.Type, name, first)
			return
		}
		declared[name] = namePos
		m.Fields = append(m.Fields, &tree.Field{Key: name, KeyPos: namePos, Value: r.body(blk.Body, fs.Elem)})
	default:
		if len(blk.Labels) != 0 {
			r.diags.ErrorAt("block-labels", rangePos(blk.LabelRanges[0]), "%s block takes no label: %s { ... }", blk.Type, blk.Type)
			return
		}
		if r.duplicate(blk.Type, typePos, seen) {
			return
		}
		obj.Fields = append(obj.Fields, &tree.Field{Key: blk.Type, KeyPos: typePos, Value: r.body(blk.Body, fs)})
	}
}

func (r *reader) duplicate(name string, p pools.Pos, seen map[string]pools.Pos) bool {
	if first, ok := seen[name]; ok {
		r.diags.ErrorAt("duplicate", p, "%s is set twice; first at %s", name, first)
		return true
	}
	seen[name] = p
	return false
}

func (r *reader) nested(blk *hclsyntax.Block, labels []string, s *schema.Spec) *tree.Value {
	if len(labels) == 0 {
		return r.body(blk.Body, s)
	}
	p := rangePos(blk.LabelRanges[len(blk.Labels)-len(labels)])
	return &tree.Value{Kind: tree.Object, Pos: p, Fields: []*tree.Field{{Key: labels[0], KeyPos: p, Value: r.nested(blk, labels[1:], s)}}}
}

// expr turns an attribute expression into a value, keeping the position
// of every list item and object field.
func (r *reader) expr(e hclsyntax.Expression) *tree.Value {
	p := rangePos(e.Range())
	switch e := e.(type) {
	case *hclsyntax.TupleConsExpr:
		v := &tree.Value{Kind: tree.List, Pos: p}
		if len(e.Exprs) > 0 {
			v.Items = make([]*tree.Value, 0, len(e.Exprs))
		}
		for _, item := range e.Exprs {
			v.Items = append(v.Items, r.expr(item))
		}
		return v
	case *hclsyntax.ObjectConsExpr:
		v := &tree.Value{Kind: tree.Object, Pos: p}
		seen := map[string]pools.Pos{}
		for _, item := range e.Items {
			kv, hd := item.KeyExpr.Value(nil)
			addHCL(&r.diags, hd)
			if hd.HasErrors() {
				continue
			}
			kp := rangePos(item.KeyExpr.Range())
			if kv.IsNull() || !kv.IsKnown() || kv.Type() != cty.String {
				r.diags.ErrorAt("syntax", kp, "object keys must be names or strings")
				continue
			}
			if r.duplicate(kv.AsString(), kp, seen) {
				continue
			}
			v.Fields = append(v.Fields, &tree.Field{Key: kv.AsString(), KeyPos: kp, Value: r.expr(item.ValueExpr)})
		}
		return v
	case *hclsyntax.FunctionCallExpr:
		// sensitive(VALUE) marks a value a secret, as Terraform's does;
		// HCL calls no other function.
		if e.Name == "sensitive" && len(e.Args) == 1 && !e.ExpandFinal {
			v := r.expr(e.Args[0])
			tree.MarkSensitive(v)
			return v
		}
	case *hclsyntax.TemplateExpr:
		// A quoted string without interpolation is its one literal part;
		// evaluating the template would only copy it.
		if e.IsStringLiteral() {
			return r.cty(e.Parts[0].(*hclsyntax.LiteralValueExpr).Val, p)
		}
	}
	cv, hd := e.Value(nil)
	addHCL(&r.diags, hd)
	if hd.HasErrors() {
		return &tree.Value{Kind: tree.Null, Pos: p}
	}
	return r.cty(cv, p)
}

func (r *reader) cty(cv cty.Value, p pools.Pos) *tree.Value {
	if cv.IsNull() {
		return &tree.Value{Kind: tree.Null, Pos: p}
	}
	if !cv.IsWhollyKnown() {
		r.diags.ErrorAt("syntax", p, "value is not known before apply")
		return &tree.Value{Kind: tree.Null, Pos: p}
	}
	t := cv.Type()
	switch {
	case t == cty.String:
		return &tree.Value{Kind: tree.String, Pos: p, Str: cv.AsString()}
	case t == cty.Number:
		bf := cv.AsBigFloat()
		f, _ := bf.Float64()
		if math.IsInf(f, 0) || f == 0 && bf.Sign() != 0 {
			// Not shown as written: printing 1e9999999 in decimal takes
			// seconds.
			r.diags.ErrorAt("syntax", p, "number is out of range: its magnitude must be 0 or from %g to %g", math.SmallestNonzeroFloat64, math.MaxFloat64)
			return &tree.Value{Kind: tree.Invalid, Pos: p}
		}
		return &tree.Value{Kind: tree.Number, Pos: p, Num: f}
	case t == cty.Bool:
		return &tree.Value{Kind: tree.Bool, Pos: p, Bool: cv.True()}
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		v := &tree.Value{Kind: tree.List, Pos: p}
		for it := cv.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			v.Items = append(v.Items, r.cty(ev, p))
		}
		return v
	case t.IsObjectType() || t.IsMapType():
		v := &tree.Value{Kind: tree.Object, Pos: p}
		for it := cv.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			v.Fields = append(v.Fields, &tree.Field{Key: k.AsString(), KeyPos: p, Value: r.cty(ev, p)})
		}
		return v
	}
	r.diags.ErrorAt("syntax", p, "unsupported value of type %s", fmt.Sprint(t.FriendlyName()))
	return &tree.Value{Kind: tree.Null, Pos: p}
}
