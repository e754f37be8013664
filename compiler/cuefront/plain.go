package cuefront

import (
	"strconv"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"

	"poolc.dev/poolc/compiler/tree"
	"poolc.dev/poolc/pools"
)

// plainData reads files written as plain data (fields with literal values,
// lists and structs: nothing for CUE to evaluate) straight from their
// syntax, into the tree CUE's evaluation would give. CUE's evaluator finds
// a struct's field by a linear search of the fields it has so far, so a
// struct of n fields takes time quadratic in n: 100,000 fields took over a
// minute. Reading plain data needs only to gather the fields declared more
// than once, by name, in linear time.
//
// ok is false when the files are not plain data, or when two declarations
// of one field are not both structs (a conflict, or values CUE would
// unify); CUE then evaluates the files as usual and gives its own verdict.
func plainData(files []*ast.File) (doc *tree.Value, diags pools.Diagnostics, ok bool) {
	p := &plain{left: MaxValues, index: map[*tree.Value]map[string]*tree.Field{}}
	doc = &tree.Value{Kind: tree.Object}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.Package, *ast.CommentGroup:
			case *ast.Field:
				if !p.field(doc, d) {
					return nil, nil, false
				}
			default:
				return nil, nil, false
			}
		}
	}
	if p.left < 0 {
		diags.ErrorAt("too-large", p.over, "the pool evaluates to more than %d values; poolc reads at most that many", MaxValues)
		return nil, diags, true
	}
	return doc, nil, true
}

type plain struct {
	left  int       // values still allowed, of MaxValues
	over  pools.Pos // where the values passed MaxValues
	index map[*tree.Value]map[string]*tree.Field
}

// count counts one value read, at p.
func (p *plain) count(at pools.Pos) {
	if p.left--; p.left == -1 {
		p.over = at
	}
}

// field adds a field declaration to obj, merging it into an earlier
// declaration of the same name.
func (p *plain) field(obj *tree.Value, f *ast.Field) bool {
	if f.Constraint != token.ILLEGAL || len(f.Attrs) > 0 {
		return false // an attribute (@poolc(sensitive)) takes the evaluator
	}
	name, ok := label(f.Label)
	if !ok {
		return false
	}
	keyPos := position(f.Label.Pos())
	idx := p.index[obj]
	if idx == nil {
		idx = map[string]*tree.Field{}
		p.index[obj] = idx
	}
	if have, ok := idx[name]; ok {
		s, isStruct := f.Value.(*ast.StructLit)
		if !isStruct || have.Value.Kind != tree.Object {
			return false
		}
		// CUE places a struct declared more than once at the value of
		// its last declaration.
		at := position(s.Pos())
		have.KeyPos, have.Value.Pos = at, at
		return p.fields(have.Value, s)
	}
	v, ok := p.value(f.Value, keyPos)
	if !ok {
		return false
	}
	fld := &tree.Field{Key: name, KeyPos: keyPos, Value: v}
	idx[name] = fld
	obj.Fields = append(obj.Fields, fld)
	return true
}

// fields adds the fields of a struct literal to obj.
func (p *plain) fields(obj *tree.Value, s *ast.StructLit) bool {
	for _, e := range s.Elts {
		switch e := e.(type) {
		case *ast.Field:
			if !p.field(obj, e) {
				return false
			}
		case *ast.CommentGroup:
		default:
			return false
		}
	}
	return true
}

// label is a field's name, when it is a regular one: not a definition,
// hidden field, alias, pattern or interpolation.
func label(l ast.Label) (string, bool) {
	switch l := l.(type) {
	case *ast.Ident:
		if len(l.Name) == 0 || l.Name[0] == '#' || l.Name[0] == '_' {
			return "", false
		}
		return l.Name, true
	case *ast.BasicLit:
		if l.Kind != token.STRING || len(l.Value) == 0 || l.Value[0] != '"' {
			return "", false
		}
		s, err := literal.Unquote(l.Value)
		return s, err == nil
	}
	return "", false
}

// value reads a literal value; at is where its field is named (or, in a
// list, where the value is), the position CUE gives a struct.
func (p *plain) value(e ast.Expr, at pools.Pos) (*tree.Value, bool) {
	p.count(at)
	switch e := e.(type) {
	case *ast.StructLit:
		obj := &tree.Value{Kind: tree.Object, Pos: at}
		return obj, p.fields(obj, e)
	case *ast.ListLit:
		list := &tree.Value{Kind: tree.List, Pos: position(e.Pos())}
		for _, item := range e.Elts {
			v, ok := p.value(item, position(item.Pos()))
			if !ok {
				return nil, false
			}
			list.Items = append(list.Items, v)
		}
		return list, true
	case *ast.UnaryExpr:
		lit, isLit := e.X.(*ast.BasicLit)
		if e.Op != token.SUB || !isLit || (lit.Kind != token.INT && lit.Kind != token.FLOAT) {
			return nil, false
		}
		v, ok := scalar(lit)
		v.Num, v.Pos = -v.Num, position(e.Pos())
		return v, ok
	case *ast.BasicLit:
		return scalar(e)
	}
	return nil, false
}

// scalar reads a basic literal: a double-quoted string, a number, a bool
// or null. Bytes ('...') are left to CUE and its message.
func scalar(l *ast.BasicLit) (*tree.Value, bool) {
	v := &tree.Value{Pos: position(l.Pos())}
	switch l.Kind {
	case token.STRING:
		if len(l.Value) == 0 || l.Value[0] != '"' {
			return nil, false
		}
		s, err := literal.Unquote(l.Value)
		v.Kind, v.Str = tree.String, s
		return v, err == nil
	case token.INT, token.FLOAT:
		f, err := strconv.ParseFloat(l.Value, 64)
		v.Kind, v.Num = tree.Number, f
		return v, err == nil
	case token.TRUE, token.FALSE:
		v.Kind, v.Bool = tree.Bool, l.Kind == token.TRUE
		return v, true
	case token.NULL:
		v.Kind = tree.Null
		return v, true
	}
	return nil, false
}
