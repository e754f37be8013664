package schema

import (
	"embed"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
)

// Files holds the schema's .cue sources, the one source of truth for the
// pool language.
//
//go:embed *.cue
var Files embed.FS

// Root returns the spec of #File, the top level of every pool file.
func Root() *Spec { return Definition("#File") }

// ScenarioRoot returns the spec of #ScenarioFile, the top level of every
// scenario file.
func ScenarioRoot() *Spec { return Definition("#ScenarioFile") }

// Definition returns the spec of a definition of the embedded schema
// files, read once. An unreadable schema is a bug of poolc's own and
// panics.
func Definition(name string) *Spec {
	embedded.once.Do(func() {
		embedded.r = &reader{defs: map[string]*ast.Field{}, specs: map[string]*Spec{}}
		ents, err := Files.ReadDir(".")
		for _, e := range ents {
			var src []byte
			if src, err = Files.ReadFile(e.Name()); err == nil {
				err = embedded.r.parse(e.Name(), src)
			}
			if err != nil {
				break
			}
		}
		embedded.err = err
	})
	if embedded.err != nil {
		panic("poolc: embedded schema is unreadable: " + embedded.err.Error())
	}
	embedded.mu.Lock()
	defer embedded.mu.Unlock()
	s, err := embedded.r.def(name)
	if err != nil {
		panic("poolc: embedded schema: " + err.Error())
	}
	return s
}

var embedded struct {
	once sync.Once
	mu   sync.Mutex // guards r's caches
	r    *reader
	err  error
}

// parse adds the definitions of one file.
func (r *reader) parse(filename string, src []byte) error {
	f, err := parser.ParseFile(filename, src, parser.ParseComments)
	if err != nil {
		return err
	}
	for _, d := range f.Decls {
		if fld, ok := d.(*ast.Field); ok {
			name, _, err := ast.LabelName(fld.Label)
			if err != nil {
				return err
			}
			r.defs[name] = fld
		}
	}
	return nil
}

type reader struct {
	defs  map[string]*ast.Field
	specs map[string]*Spec
}

func (r *reader) def(name string) (*Spec, error) {
	if s, ok := r.specs[name]; ok {
		return s, nil
	}
	fld, ok := r.defs[name]
	if !ok {
		return nil, fmt.Errorf("schema: %s is not defined", name)
	}
	s, err := r.expr(fld.Value)
	if err != nil {
		return nil, fmt.Errorf("schema: %s: %w", name, err)
	}
	s.Name = name
	s.Doc = docOf(fld)
	r.specs[name] = s
	return s, nil
}

func (r *reader) expr(e ast.Expr) (*Spec, error) {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return r.expr(e.X)
	case *ast.Ident:
		return r.ident(e.Name)
	case *ast.BasicLit:
		l, err := parseLit(e)
		if err != nil {
			return nil, err
		}
		return &Spec{Kinds: l.Kind, Enum: []Literal{l}}, nil
	case *ast.UnaryExpr:
		return r.unary(e)
	case *ast.BinaryExpr:
		a, err := r.expr(e.X)
		if err != nil {
			return nil, err
		}
		b, err := r.expr(e.Y)
		if err != nil {
			return nil, err
		}
		switch e.Op {
		case token.AND:
			return meet(a, b)
		case token.OR:
			return join(a, b)
		}
	case *ast.ListLit:
		return r.list(e)
	case *ast.StructLit:
		return r.structLit(e)
	}
	return nil, fmt.Errorf("unsupported expression %T at %v", e, e.Pos())
}

func (r *reader) ident(name string) (*Spec, error) {
	switch name {
	case "string":
		return &Spec{Kinds: KindString}, nil
	case "number":
		return &Spec{Kinds: KindNumber}, nil
	case "int":
		return &Spec{Kinds: KindNumber, Int: true}, nil
	case "uint":
		return &Spec{Kinds: KindNumber, Int: true, Min: &Bound{0, true}}, nil
	case "bool":
		return &Spec{Kinds: KindBool}, nil
	case "_":
		return &Spec{Kinds: KindAny}, nil
	}
	if strings.HasPrefix(name, "#") {
		s, err := r.def(name)
		if err != nil {
			return nil, err
		}
		c := *s // a copy, so meet and join never write into a shared definition
		return &c, nil
	}
	return nil, fmt.Errorf("unsupported identifier %s", name)
}

func (r *reader) unary(e *ast.UnaryExpr) (*Spec, error) {
	if e.Op == token.MUL { // a default marker
		s, err := r.expr(e.X)
		if err != nil {
			return nil, err
		}
		if len(s.Enum) != 1 {
			return nil, fmt.Errorf("default at %v is not a literal", e.Pos())
		}
		d := s.Enum[0]
		s.Default = &d
		return s, nil
	}
	lit, ok := e.X.(*ast.BasicLit)
	if !ok {
		return nil, fmt.Errorf("unsupported operand at %v", e.Pos())
	}
	l, err := parseLit(lit)
	if err != nil {
		return nil, err
	}
	switch e.Op {
	case token.GTR, token.GEQ, token.LSS, token.LEQ:
		if l.Kind != KindNumber {
			return nil, fmt.Errorf("bound at %v is not a number", e.Pos())
		}
		b := &Bound{Value: l.Num, Inclusive: e.Op == token.GEQ || e.Op == token.LEQ}
		s := &Spec{Kinds: KindNumber}
		if e.Op == token.GTR || e.Op == token.GEQ {
			s.Min = b
		} else {
			s.Max = b
		}
		return s, nil
	case token.MAT:
		re, err := regexp.Compile(l.Str)
		if err != nil {
			return nil, err
		}
		return &Spec{Kinds: KindString, Patterns: []*regexp.Regexp{re}}, nil
	case token.NEQ:
		return &Spec{Kinds: KindString, NotEqual: []string{l.Str}}, nil
	}
	return nil, fmt.Errorf("unsupported operator %v at %v", e.Op, e.Pos())
}

func (r *reader) list(e *ast.ListLit) (*Spec, error) {
	if len(e.Elts) != 1 {
		return nil, fmt.Errorf("only [...T] lists are supported, at %v", e.Pos())
	}
	el, ok := e.Elts[0].(*ast.Ellipsis)
	if !ok {
		return nil, fmt.Errorf("only [...T] lists are supported, at %v", e.Pos())
	}
	elem := &Spec{Kinds: KindAny}
	if el.Type != nil {
		var err error
		if elem, err = r.expr(el.Type); err != nil {
			return nil, err
		}
	}
	return &Spec{Kinds: KindList, Elem: elem}, nil
}

func (r *reader) structLit(e *ast.StructLit) (*Spec, error) {
	s := &Spec{Kinds: KindStruct}
	for _, d := range e.Elts {
		switch d := d.(type) {
		case *ast.Ellipsis:
			return &Spec{Kinds: KindAny}, nil
		case *ast.Field:
			if pat, ok := d.Label.(*ast.ListLit); ok {
				if len(e.Elts) != 1 || len(pat.Elts) != 1 {
					return nil, fmt.Errorf("a pattern constraint must be alone in its struct, at %v", d.Pos())
				}
				key := pat.Elts[0]
				if a, ok := key.(*ast.Alias); ok {
					key = a.Expr
				}
				ks, err := r.expr(key)
				if err != nil {
					return nil, err
				}
				vs, err := r.expr(d.Value)
				if err != nil {
					return nil, err
				}
				return &Spec{Kinds: KindMap, Key: ks, Elem: vs}, nil
			}
			name, _, err := ast.LabelName(d.Label)
			if err != nil {
				return nil, err
			}
			vs, err := r.expr(d.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			s.Fields = append(s.Fields, &Field{Name: name, Required: d.Constraint == token.NOT, Doc: docOf(d), Spec: vs})
		default:
			return nil, fmt.Errorf("unsupported declaration %T at %v", d, d.Pos())
		}
	}
	return s, nil
}

// meet is the spec of a & b.
func meet(a, b *Spec) (*Spec, error) {
	k := a.Kinds & b.Kinds
	switch {
	case a.Kinds == KindAny:
		k = b.Kinds
	case b.Kinds == KindAny:
		k = a.Kinds
	}
	if k == 0 {
		return nil, fmt.Errorf("a conjunction of disjoint kinds")
	}
	if a.Fields != nil || b.Fields != nil || a.Elem != nil || b.Elem != nil {
		return nil, fmt.Errorf("conjunctions of composite values are not supported")
	}
	s := &Spec{Kinds: k, Int: a.Int || b.Int, Name: a.Name, Doc: a.Doc}
	if s.Name == "" {
		s.Name, s.Doc = b.Name, b.Doc
	}
	s.Min = tighter(a.Min, b.Min, 1)
	s.Max = tighter(a.Max, b.Max, -1)
	s.Patterns = append(append(s.Patterns, a.Patterns...), b.Patterns...)
	s.NotEqual = append(append(s.NotEqual, a.NotEqual...), b.NotEqual...)
	switch {
	case a.Enum != nil && b.Enum != nil:
		return nil, fmt.Errorf("a conjunction of enumerations is not supported")
	case a.Enum != nil:
		s.Enum = a.Enum
	case b.Enum != nil:
		s.Enum = b.Enum
	}
	return s, nil
}

// tighter returns the stricter of two bounds; sign is 1 for lower bounds
// and -1 for upper bounds.
func tighter(a, b *Bound, sign float64) *Bound {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.Value*sign > b.Value*sign:
		return a
	case a.Value == b.Value && !a.Inclusive:
		return a
	}
	return b
}

// join is the spec of a | b. It covers the disjunctions the schema needs:
// enumerations, a constrained value or its default, and values of
// different kinds (string | [...string]).
func join(a, b *Spec) (*Spec, error) {
	isConst := func(s *Spec) bool { return len(s.Enum) > 0 && s.Min == nil && s.Max == nil && s.Patterns == nil }
	switch {
	case isConst(a) && isConst(b):
		s := &Spec{Kinds: a.Kinds | b.Kinds, Enum: append(append([]Literal{}, a.Enum...), b.Enum...)}
		s.Enum = dedupe(s.Enum)
		s.Default = firstDefault(a, b)
		return s, nil
	case isConst(b) && len(b.Enum) == 1 && b.Default != nil && a.Enum == nil:
		if err := admits(a, *b.Default); err != nil {
			return nil, err
		}
		s := *a
		s.Default = b.Default
		return &s, nil
	case isConst(a) && len(a.Enum) == 1 && a.Default != nil && b.Enum == nil:
		return join(b, a)
	case a.Kinds&b.Kinds == 0 && plain(a) && plain(b):
		s := &Spec{Kinds: a.Kinds | b.Kinds}
		for _, x := range []*Spec{a, b} {
			if x.Elem != nil {
				s.Elem = x.Elem
			}
			if x.Key != nil {
				s.Key = x.Key
			}
			s.Fields = append(s.Fields, x.Fields...)
		}
		return s, nil
	}
	return nil, fmt.Errorf("unsupported disjunction")
}

// plain reports whether a spec has no scalar rules, so it can be one
// branch of a disjunction of kinds without its rules leaking to the other.
func plain(s *Spec) bool {
	return s.Enum == nil && s.Min == nil && s.Max == nil && !s.Int && s.Patterns == nil && s.NotEqual == nil && s.Default == nil
}

func firstDefault(a, b *Spec) *Literal {
	if a.Default != nil {
		return a.Default
	}
	return b.Default
}

func dedupe(ls []Literal) []Literal {
	out := ls[:0]
	for i, l := range ls {
		seen := false
		for _, m := range ls[:i] {
			if m == l {
				seen = true
			}
		}
		if !seen {
			out = append(out, l)
		}
	}
	return out
}

// admits checks a default against the spec it defaults, when the schema is read.
func admits(s *Spec, l Literal) error {
	if !s.Accepts(l.Kind) {
		return fmt.Errorf("default %v is not of the field's kind", l)
	}
	if l.Kind == KindNumber {
		if !s.InRange(l.Num) {
			return fmt.Errorf("default %v is out of bounds", l)
		}
	}
	return nil
}

func parseLit(e *ast.BasicLit) (Literal, error) {
	switch e.Kind {
	case token.STRING:
		s, err := literal.Unquote(e.Value)
		if err != nil {
			return Literal{}, err
		}
		return Literal{Kind: KindString, Str: s}, nil
	case token.INT, token.FLOAT:
		f, err := strconv.ParseFloat(e.Value, 64)
		if err != nil || math.IsInf(f, 0) {
			return Literal{}, fmt.Errorf("bad number %s", e.Value)
		}
		return Literal{Kind: KindNumber, Num: f}, nil
	case token.TRUE, token.FALSE:
		return Literal{Kind: KindBool, Bool: e.Kind == token.TRUE}, nil
	}
	return Literal{}, fmt.Errorf("unsupported literal %s", e.Value)
}

// docOf returns the first sentence of a field's doc comment.
func docOf(f *ast.Field) string {
	for _, cg := range ast.Comments(f) {
		if cg.Doc {
			text := strings.Join(strings.Fields(cg.Text()), " ")
			if i := strings.Index(text, ". "); i >= 0 {
				text = text[:i+1]
			}
			return text
		}
	}
	return ""
}
