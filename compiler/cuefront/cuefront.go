// Package cuefront reads pool files written in CUE into the positioned
// value tree the schema check and the decoder share.
//
// The files of one pool are built as one CUE instance, so they may refer
// to each other and use CUE's own means (references, comprehensions,
// builtin packages); the evaluated, concrete result is what poolc reads.
package cuefront

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/scanner"
	"cuelang.org/go/cue/token"

	"poolc.dev/poolc/compiler/numlit"
	"poolc.dev/poolc/compiler/tree"
	"poolc.dev/poolc/pools"
)

// Source is one CUE file: its name as the user gave it and its bytes.
type Source struct {
	Name string
	Src  []byte
}

// Parse builds the files as one instance and reads the result into a
// tree. CUE's own errors (syntax, conflicts, values left incomplete) come
// back as diagnostics at the positions CUE gives.
func Parse(files []Source) (*tree.Value, pools.Diagnostics) {
	var diags pools.Diagnostics
	var syntax []*ast.File
	inst := build.NewContext().NewInstance("", nil)
	for _, f := range files {
		if d := scan(f.Name, f.Src); d != nil {
			diags = append(diags, *d)
			continue
		}
		syn, err := parser.ParseFile(f.Name, f.Src, parser.ParseComments)
		if err != nil {
			addCUE(&diags, err)
			continue
		}
		if !standardImports(syn, &diags) || !noExtern(syn, &diags) {
			continue
		}
		if err := inst.AddSyntax(syn); err != nil {
			addCUE(&diags, err)
		}
		syntax = append(syntax, syn)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	if doc, more, ok := plainData(syntax); ok {
		return doc, append(diags, more...)
	}
	if doc, more, ok := evaluateApart(files); ok {
		return doc, append(diags, more...)
	}
	return evaluateHere(inst, files[0].Name, diags)
}

// evaluateHere evaluates the instance in this process, within
// MaxEvalTime; the evaluation cannot be stopped, so past the limit it is
// left running in the background.
func evaluateHere(inst *build.Instance, first string, diags pools.Diagnostics) (*tree.Value, pools.Diagnostics) {
	type result struct {
		doc   *tree.Value
		diags pools.Diagnostics
	}
	done := make(chan result, 1)
	go func() {
		doc, diags := evaluate(inst)
		done <- result{doc, diags}
	}()
	timeout := time.NewTimer(MaxEvalTime)
	defer timeout.Stop()
	select {
	case r := <-done:
		return r.doc, append(diags, r.diags...)
	case <-timeout.C:
		diags = append(diags, tooSlow(first))
		return nil, diags
	}
}

func tooSlow(first string) pools.Diagnostic {
	return pools.Diagnostic{Code: "too-slow", Pos: pools.Pos{File: first, Line: 1, Col: 1}, Message: fmt.Sprintf("CUE did not finish evaluating the pool within %v: look for long chains of references (a: b, b: c, ...) or large comprehensions", MaxEvalTime)}
}

// written is where v's value is written, if its source says; p, where it
// is named, if not.
func written(v cue.Value, p pools.Pos) pools.Pos {
	switch src := v.Source().(type) {
	case *ast.Field:
		if src.Value != nil {
			return position(src.Value.Pos())
		}
	case ast.Expr:
		return position(src.Pos())
	}
	return p
}

// MaxEvalTime is how long Parse waits for CUE to evaluate a pool; the
// commands that load a pool set it from their --cue-timeout flag
// (DefaultEvalTime). Pools of plain data (plain.go) are read without
// evaluation; the largest pools poolc is designed for that need the
// evaluator take about two seconds; but a few lines of CUE can keep the
// evaluator busy for hours (a chain of references a0: a1, a1: a2, ...
// takes time cubic in its length; [for i in r for j in r for k in r {i}]
// over 2,000 values is 8 billion steps). An evaluation in a child process
// (evaluateApart) is killed at the limit; one in this process cannot be
// interrupted and is left running in the background until it ends or the
// program exits, as poolc's commands do right after reporting.
var MaxEvalTime = DefaultEvalTime

// DefaultEvalTime is MaxEvalTime unless a command's --cue-timeout says
// otherwise.
const DefaultEvalTime = 10 * time.Second

// evaluate builds the instance and reads it into a tree.
func evaluate(inst *build.Instance) (*tree.Value, pools.Diagnostics) {
	var diags pools.Diagnostics
	v := cuecontext.New().BuildInstance(inst)
	if err := v.Err(); err != nil {
		addEvalCUE(&diags, err, v)
		return nil, diags
	}
	addEvalCUE(&diags, v.Validate(cue.Concrete(true)), v)
	r := &reader{diags: diags, left: MaxValues}
	root := position(v.Pos())
	if root.Line == 0 && len(inst.Files) > 0 {
		root = pools.Pos{File: inst.Files[0].Filename, Line: 1, Col: 1}
	}
	doc := r.read(v, root)
	return doc, r.diags
}

// standardImports reports every import of f outside CUE's standard
// library: poolc builds the files alone, without a module to find other
// packages in, and CUE's own message for them names no module.
func standardImports(f *ast.File, diags *pools.Diagnostics) bool {
	ok := true
	for spec := range f.ImportSpecs() {
		path, err := literal.Unquote(spec.Path.Value)
		if first, _, _ := strings.Cut(path, "/"); err == nil && !strings.Contains(first, ".") {
			continue // CUE checks the name itself: builtin package "x" undefined
		}
		diags.ErrorAt("import", position(spec.Path.Pos()), "cannot import %s: pool files may import CUE's standard library (strings, list, math, ...) but no other package", spec.Path.Value)
		ok = false
	}
	return ok
}

// noExtern refuses the file attribute @extern (CUE's @extern(embed)
// reads other files into the pool, which CUE allows only in a module and
// refuses with no position), at the attribute, before CUE sees it.
func noExtern(f *ast.File, diags *pools.Diagnostics) bool {
	ok := true
	for _, d := range f.Decls {
		if a, isAttr := d.(*ast.Attribute); isAttr {
			if key, _ := a.Split(); key == "extern" {
				diags.ErrorAt("extern", position(a.Pos()), "%s: a pool is read from its own files only; @extern (embedding or external values) is not supported", tree.Clip(a.Text))
				ok = false
			}
		}
	}
	return ok
}

// MaxValues is the most values (fields, list items and scalars) poolc
// reads from an evaluated CUE pool. A pool of 1,000 nodes and 10,000 lanes
// has about 100,000; CUE shares structure, so a few lines (a: [b, b], b:
// [c, c], ...) can describe billions of values, and reading them all would
// not end.
const MaxValues = 1_000_000

// reader reads an evaluated instance into a tree.
type reader struct {
	diags pools.Diagnostics
	left  int // values still allowed, of MaxValues
}

// addCUE turns each error CUE reports into a diagnostic at its position.
func addCUE(ds *pools.Diagnostics, err error) { addEvalCUE(ds, err, cue.Value{}) }

// addEvalCUE is addCUE for the errors of evaluating root. Some (an
// incomplete value, a structural cycle) come without a position; they are
// placed where their path is in root.
func addEvalCUE(ds *pools.Diagnostics, err error, root cue.Value) {
	for _, e := range errors.Errors(err) {
		p := e.Position()
		if !p.IsValid() {
			if in := e.InputPositions(); len(in) > 0 {
				p = in[0]
			}
		}
		if !p.IsValid() {
			var sels []cue.Selector
			for _, s := range e.Path() {
				sels = append(sels, cue.ParsePath(s).Selectors()...)
			}
			p = heldAt(root.LookupPath(cue.MakePath(sels...)))
		}
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		if strings.HasPrefix(format, "incomplete value") {
			msg += ": a pool needs one concrete value here; write one, or mark a default with * (port: *8081 | int)"
		}
		if path := pathText(e.Path()); path != "" {
			msg = path + ": " + msg
		}
		ds.ErrorAt("cue", position(p), "%s", msg)
	}
}

// heldAt is where v is written. A value unified from several places (a
// template and the field that uses it) is placed at the first of them
// that has a position, the use, rather than at the template CUE names.
func heldAt(v cue.Value) token.Pos {
	if op, args := v.Expr(); op == cue.AndOp {
		for _, a := range args {
			if p := a.Pos(); p.IsValid() {
				return p
			}
		}
	}
	return v.Pos()
}

// pathText shows a CUE error path without the leading pool.NAME, as the
// schema check's messages do.
func pathText(path []string) string {
	if len(path) >= 2 && path[0] == "pool" {
		path = path[2:]
	}
	out := ""
	for i, p := range path {
		if i > 0 {
			out += "."
		}
		out += p
	}
	return out
}

func position(p token.Pos) pools.Pos {
	if !p.IsValid() {
		return pools.Pos{}
	}
	at := p.Position() // Line and Column would each unpack it again
	return pools.Pos{File: p.Filename(), Line: at.Line, Col: at.Column}
}

// within is a value's position, or, for a value CUE gives none (one of
// the standard library's, embedded), the position of what holds it.
func within(p, holder pools.Pos) pools.Pos {
	if p.Line == 0 {
		return holder
	}
	return p
}

// read reads v, which is at p, into a tree. Callers pass p because
// finding a value's position is not free and a field needs it twice.
func (r *reader) read(v cue.Value, p pools.Pos) *tree.Value {
	if r.left--; r.left < 0 {
		if r.left == -1 {
			r.diags.ErrorAt("too-large", p, "the pool evaluates to more than %d values; poolc reads at most that many", MaxValues)
		}
		return &tree.Value{Kind: tree.Invalid, Pos: p}
	}
	// A disjunction with a marked default (port: *8081 | int) is read as
	// its default, as CUE's own export does: the user left it open.
	if d, ok := v.Default(); ok {
		v = d
	}
	switch v.Kind() {
	case cue.StructKind:
		obj := &tree.Value{Kind: tree.Object, Pos: p}
		it, err := v.Fields()
		if err != nil {
			return &tree.Value{Kind: tree.Invalid, Pos: p}
		}
		for it.Next() {
			fv := it.Value()
			keyPos := within(position(fv.Pos()), p)
			val := r.read(fv, keyPos)
			if val.Kind != tree.Object {
				val.Pos = written(fv, val.Pos)
			}
			if sensitive(fv) {
				tree.MarkSensitive(val)
			}
			obj.Fields = append(obj.Fields, &tree.Field{Key: it.Selector().Unquoted(), KeyPos: keyPos, Value: val})
		}
		return obj
	case cue.ListKind:
		list := &tree.Value{Kind: tree.List, Pos: p}
		it, err := v.List()
		if err != nil {
			return &tree.Value{Kind: tree.Invalid, Pos: p}
		}
		for it.Next() {
			item := it.Value()
			list.Items = append(list.Items, r.read(item, within(position(item.Pos()), p)))
		}
		return list
	case cue.StringKind:
		s, _ := v.String()
		return &tree.Value{Kind: tree.String, Pos: p, Str: s}
	case cue.IntKind, cue.FloatKind, cue.NumberKind:
		f, err := v.Float64()
		if err != nil {
			r.diags.ErrorAt("cue", written(v, p), "number %v is out of range: its magnitude must be 0 or from %g to %g", v, math.SmallestNonzeroFloat64, math.MaxFloat64)
			return &tree.Value{Kind: tree.Invalid, Pos: p}
		}
		return &tree.Value{Kind: tree.Number, Pos: p, Num: f}
	case cue.BoolKind:
		b, _ := v.Bool()
		return &tree.Value{Kind: tree.Bool, Pos: p, Bool: b}
	case cue.NullKind:
		return &tree.Value{Kind: tree.Null, Pos: p}
	case cue.BytesKind:
		r.diags.ErrorAt("wrong-type", written(v, p), "'...' is bytes in CUE, and pools hold no bytes: write a string in double quotes")
	default:
		// A value left incomplete was reported by the validation; a
		// function (len, or) passes it.
		if v.Validate(cue.Concrete(true)) == nil {
			r.diags.ErrorAt("wrong-type", written(v, p), "%v is not a value a pool can hold: write a string, number, bool, list or struct", v)
		}
	}
	return &tree.Value{Kind: tree.Invalid, Pos: p}
}

// scan reads src's tokens for what CUE would mishandle, before it parses
// them: nesting deeper than tree.MaxNesting, which its parser and
// evaluator would recurse into until the stack is exhausted, number
// literals HCL would read otherwise (numlit), and number literals beyond
// float64, which it may read as 1 (1e999999).
//
// Within a field every opening bracket, label colon, keyword and operator
// counts as a level of nesting, since each may nest the parsed expression
// one deeper (a: b: c: and 1+1+1 are three levels deep); a comma, written
// or at a line's end, ends the field and releases its levels.
func scan(filename string, src []byte) *pools.Diagnostic {
	type level struct {
		open   token.Token // what opened it; ILLEGAL for the file
		interp bool        // a \( of a string interpolation
		count  int         // levels held by the current field
	}
	closes := map[token.Token]token.Token{token.RPAREN: token.LPAREN, token.RBRACK: token.LBRACK, token.RBRACE: token.LBRACE}
	var s scanner.Scanner
	s.Init(token.NewFile(filename, -1, len(src)), src, nil, 0)
	stack := []level{{}}
	depth := 0
	interp := false // the next ( opens an interpolation
	for {
		pos, tok, lit := s.Scan()
		top := &stack[len(stack)-1]
		switch {
		case tok == token.EOF:
			return nil
		case tok == token.FLOAT || tok == token.INT:
			if err := numlit.Check(lit); err != nil {
				return &pools.Diagnostic{Code: "syntax", Pos: position(pos), Message: err.Error()}
			}
			if !inRange(lit) {
				return &pools.Diagnostic{Code: "syntax", Pos: position(pos), Message: fmt.Sprintf("number %s is out of range: its magnitude must be 0 or from %g to %g", lit, math.SmallestNonzeroFloat64, math.MaxFloat64)}
			}
			continue
		case tok == token.INTERPOLATION:
			interp = true
			continue
		case tok.IsLiteral(), tok == token.COMMENT, tok == token.ATTRIBUTE, tok == token.TRUE, tok == token.FALSE, tok == token.NULL:
			continue
		case tok == token.COMMA:
			depth -= top.count
			top.count = 0
			continue
		}
		if open, ok := closes[tok]; ok {
			if len(stack) > 1 && top.open == open {
				depth -= top.count
				stack = stack[:len(stack)-1]
				// The scanner leaves the rest of an interpolated string
				// to its caller.
				if top.interp && strings.HasSuffix(s.ResumeInterpolation(), "(") {
					interp = true
				}
			}
			continue
		}
		top.count++
		depth++
		if depth > tree.MaxNesting {
			return &pools.Diagnostic{Code: "too-deep", Pos: position(pos), Message: fmt.Sprintf("nested too deeply: poolc reads at most %d levels of brackets, labels and operators", tree.MaxNesting)}
		}
		if tok == token.LPAREN || tok == token.LBRACK || tok == token.LBRACE {
			stack = append(stack, level{open: tok, interp: interp && tok == token.LPAREN})
			interp = false
		}
	}
}

// inRange reports whether a decimal number literal is 0 or within the
// range of a float64.
func inRange(lit string) bool {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return !errors.Is(err, strconv.ErrRange)
	}
	mantissa, _, _ := strings.Cut(strings.ToLower(lit), "e")
	return f != 0 || !strings.ContainsAny(mantissa, "123456789")
}

// sensitive reports whether a field carries @poolc(sensitive), which
// marks its value a secret (the attribute plugin schemas use too).
func sensitive(v cue.Value) bool {
	a := v.Attribute("poolc")
	ok, _ := a.Flag(0, "sensitive")
	return ok
}
