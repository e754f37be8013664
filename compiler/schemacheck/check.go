// Package schemacheck checks a positioned value tree (compiler/tree), from
// either front end, against the embedded schema (schema.Spec): kinds,
// bounds, enumerations, patterns, required and unknown fields, every
// finding with its position; and it fills in the schema's defaults.
package schemacheck

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"poolc.dev/poolc/compiler/suggest"
	"poolc.dev/poolc/compiler/tree"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/schema"
)

// Check checks a pool document against the schema's #File and reports
// every finding, not only the first. Where the document is sound it fills
// in the schema's defaults for absent optional fields, so the decoder reads
// one complete shape.
func Check(doc *tree.Value) pools.Diagnostics {
	return CheckAgainst(doc, schema.Root())
}

// CheckAgainst is Check for another kind of document, whose top level is
// root (ScenarioRoot for a scenario file).
func CheckAgainst(doc *tree.Value, root *schema.Spec) pools.Diagnostics {
	c := &checker{}
	c.value(doc, root, where{}, "")
	return c.diags
}

type checker struct {
	diags pools.Diagnostics
}

// where describes the object a finding is in, as messages show it:
// `lane "video"`, `node "spark-01" guard`.
type where struct {
	text string
	// quiet marks the pool itself: its contents are described without the
	// pool's name, since every file declares one pool.
	quiet bool
}

func (w where) in(text string) where {
	if w.text == "" || w.quiet {
		return where{text: text}
	}
	return where{text: w.text + " " + text}
}

func (w where) say(subject, format string, args ...any) string {
	msg := fmt.Sprintf(format, args...)
	if subject != "" {
		msg = subject + " " + msg
	}
	if w.text != "" && !w.quiet {
		msg = w.text + ": " + msg
	}
	return msg
}

func (c *checker) errorf(code string, pos pools.Pos, msg string) {
	c.diags.ErrorAt(code, pos, "%s", msg)
}

// value checks v against s. subject names v in messages ("port",
// "placement[1]"), w is the object it sits in.
func (c *checker) value(v *tree.Value, s *schema.Spec, w where, subject string) {
	if s.Kinds == schema.KindAny || v.Kind == tree.Invalid {
		return
	}
	if !s.Accepts(kindOf(v)) {
		got := v.Kind.String()
		if v.Kind == tree.String || v.Kind == tree.Number || v.Kind == tree.Bool {
			got = fmt.Sprintf("%s (%s)", v.Describe(), strings.TrimPrefix(got, "a "))
		}
		c.errorf("wrong-type", v.Pos, w.say(subject, "must be %s, got %s", expected(s), got))
		return
	}
	switch v.Kind {
	case tree.Number:
		c.number(v, s, w, subject)
	case tree.String:
		c.string(v, s, w, subject)
	case tree.List:
		for i, item := range v.Items {
			c.value(item, s.Elem, w, subject+"["+strconv.Itoa(i)+"]")
		}
	case tree.Object:
		if s.Kinds&schema.KindMap != 0 {
			c.mapping(v, s, w, subject)
		} else {
			c.object(v, s, w.in(subject), v.Pos)
		}
	}
}

func kindOf(v *tree.Value) schema.Kinds {
	switch v.Kind {
	case tree.Bool:
		return schema.KindBool
	case tree.Number:
		return schema.KindNumber
	case tree.String:
		return schema.KindString
	case tree.List:
		return schema.KindList
	case tree.Object:
		return schema.KindStruct | schema.KindMap
	}
	return 0
}

// MaxInt is the largest magnitude of an integer field: every integer up
// to it is exact as a float64 (the numbers of the tree) and fits an int
// of the IR, so 99999999999999999999 never wraps round to a negative.
const MaxInt = 1 << 53

func (c *checker) number(v *tree.Value, s *schema.Spec, w where, subject string) {
	ok := !math.IsInf(v.Num, 0) && !math.IsNaN(v.Num)
	if ok && s.Int && v.Num != math.Trunc(v.Num) {
		ok = false
	}
	if ok && s.Int && math.Abs(v.Num) > MaxInt {
		c.errorf("out-of-range", v.Pos, w.say(subject, "must be %s, and no larger than %s, got %s", expected(s), pools.Num(MaxInt), v.Describe()))
		return
	}
	if ok && !s.InRange(v.Num) {
		ok = false
	}
	if ok && s.Enum != nil && !enumHas(s.Enum, schema.Literal{Kind: schema.KindNumber, Num: v.Num}) {
		ok = false
	}
	if !ok {
		c.errorf("out-of-range", v.Pos, w.say(subject, "must be %s, got %s", expected(s), v.Describe()))
	}
}

func (c *checker) string(v *tree.Value, s *schema.Spec, w where, subject string) {
	if s.Enum != nil && !enumHas(s.Enum, schema.Literal{Kind: schema.KindString, Str: v.Str}) {
		c.errorf("not-allowed", v.Pos, w.say(subject, "must be %s, got %s", expected(s), v.Describe()))
		return
	}
	for _, ne := range s.NotEqual {
		if v.Str == ne {
			c.errorf("not-allowed", v.Pos, w.say(subject, "must not be %s", strconv.Quote(ne)))
			return
		}
	}
	if !s.MatchesPatterns(v.Str) {
		c.errorf("bad-format", v.Pos, w.say(subject, "must be %s, got %s", expected(s), v.Describe()))
	}
}

func enumHas(enum []schema.Literal, l schema.Literal) bool {
	for _, e := range enum {
		if e == l {
			return true
		}
	}
	return false
}

// mapping checks an object whose keys are names: `node "spark-01" {...}`.
func (c *checker) mapping(v *tree.Value, s *schema.Spec, w where, subject string) {
	for _, f := range v.Fields {
		if s.Key != nil && s.Key.Kinds == schema.KindString {
			key := &tree.Value{Kind: tree.String, Str: f.Key, Pos: f.KeyPos}
			c.string(key, s.Key, w, subject+" name")
		}
		name := subject + " " + strconv.Quote(f.Key)
		if s.Elem.Kinds == schema.KindStruct && f.Value.Kind == tree.Object {
			inner := w.in(name)
			inner.quiet = w.text == "" // the top level's one entry: every file declares one
			c.object(f.Value, s.Elem, inner, f.KeyPos)
			continue
		}
		c.value(f.Value, s.Elem, w, name)
	}
}

// object checks the fields of a struct: unknown fields, required fields,
// each value; then fills in defaults. at is where the object is named, for
// findings about the object as a whole.
func (c *checker) object(v *tree.Value, s *schema.Spec, w where, at pools.Pos) {
	if at.IsZero() {
		at = v.Pos
	}
	misspelt := map[string]bool{}
	for _, f := range v.Fields {
		fs := s.Field(f.Key)
		if fs == nil {
			msg, meant := unknownField(w, f.Key, s)
			misspelt[meant] = true
			c.errorf("unknown-field", f.KeyPos, msg)
			continue
		}
		c.value(f.Value, fs.Spec, w, f.Key)
	}
	for _, fs := range s.Fields {
		if v.Get(fs.Name) != nil {
			continue
		}
		switch {
		case fs.Required && misspelt[fs.Name]:
			// The unknown-field finding already names it.
		case fs.Required:
			c.errorf("missing-field", at, missing(w, fs))
		case fs.Spec.Default != nil:
			v.Fields = append(v.Fields, &tree.Field{Key: fs.Name, Value: literalValue(*fs.Spec.Default)})
		case allDefaulted(fs.Spec):
			// An absent guard or state block means "all defaults".
			blk := &tree.Value{Kind: tree.Object}
			c.object(blk, fs.Spec, w, at)
			v.Fields = append(v.Fields, &tree.Field{Key: fs.Name, Value: blk})
		}
	}
}

// allDefaulted reports whether a struct has defaults and nothing required,
// so leaving it out means the same as writing it empty.
func allDefaulted(s *schema.Spec) bool {
	if s.Kinds != schema.KindStruct {
		return false
	}
	defaults := 0
	for _, f := range s.Fields {
		if f.Required {
			return false
		}
		if f.Spec.Default != nil {
			defaults++
		}
	}
	return defaults > 0
}

func missing(w where, fs *schema.Field) string {
	msg := fmt.Sprintf("missing required field %q", fs.Name)
	if fs.Doc != "" {
		msg += " (" + strings.TrimSuffix(fs.Doc, ".") + ")"
	}
	if w.text == "" || w.quiet {
		return msg
	}
	return w.text + ": " + msg
}

// unknownField says a field is not in the schema, and which field was
// probably meant, if any.
func unknownField(w where, key string, s *schema.Spec) (msg, meant string) {
	msg = fmt.Sprintf("unknown field %q", key)
	if w.text != "" && !w.quiet {
		msg = w.text + ": " + msg
	}
	names := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		names[i] = f.Name
	}
	if best := suggest.Nearest(key, names); best != "" {
		return msg + fmt.Sprintf("; did you mean %q?", best), best
	}
	return msg + "; allowed: " + strings.Join(names, ", "), ""
}

func literalValue(l schema.Literal) *tree.Value {
	switch l.Kind {
	case schema.KindString:
		return &tree.Value{Kind: tree.String, Str: l.Str}
	case schema.KindBool:
		return &tree.Value{Kind: tree.Bool, Bool: l.Bool}
	}
	return &tree.Value{Kind: tree.Number, Num: l.Num}
}

// expected describes what a spec accepts, for "must be ..." messages.
func expected(s *schema.Spec) string {
	if s.Enum != nil {
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			vals[i] = e.String()
		}
		if len(vals) == 1 {
			return vals[0]
		}
		return "one of " + strings.Join(vals[:len(vals)-1], ", ") + " or " + vals[len(vals)-1]
	}
	if len(s.Patterns) > 0 || s.NotEqual != nil {
		if d := definitionPhrase(s); d != "" {
			return d
		}
		if len(s.Patterns) > 0 {
			return "text matching " + s.Patterns[0].String()
		}
		return "a non-empty string"
	}
	var kinds []string
	for _, k := range []struct {
		k    schema.Kinds
		name string
	}{{schema.KindBool, "true or false"}, {schema.KindNumber, "a number"}, {schema.KindString, "a string"}, {schema.KindList, "a list"}, {schema.KindStruct, "a block"}, {schema.KindMap, "a block"}} {
		if s.Kinds&k.k == 0 {
			continue
		}
		name := k.name
		if k.k == schema.KindNumber {
			name = numberPhrase(s)
		}
		if k.k == schema.KindList && s.Elem != nil && s.Elem.Kinds == schema.KindString {
			name = "a list of strings"
		}
		kinds = append(kinds, name)
	}
	sort.Strings(kinds)
	return strings.Join(kinds, " or ")
}

// definitionPhrase turns "#Name is a lowercase name: ..." into "a
// lowercase name: ...".
func definitionPhrase(s *schema.Spec) string {
	_, rest, ok := strings.Cut(s.Doc, " is ")
	if !ok {
		return ""
	}
	return strings.TrimSuffix(rest, ".")
}

func numberPhrase(s *schema.Spec) string {
	name := "a number"
	if s.Int {
		name = "an integer"
	}
	lo, hi := s.Min, s.Max
	if s.Int && lo != nil && hi != nil && lo.Inclusive && hi.Inclusive {
		return fmt.Sprintf("%s from %s to %s", name, pools.Num(lo.Value), pools.Num(hi.Value))
	}
	var parts []string
	if lo != nil {
		if lo.Inclusive {
			parts = append(parts, "at least "+pools.Num(lo.Value))
		} else {
			parts = append(parts, "greater than "+pools.Num(lo.Value))
		}
	}
	if hi != nil {
		if hi.Inclusive {
			parts = append(parts, "at most "+pools.Num(hi.Value))
		} else {
			parts = append(parts, "less than "+pools.Num(hi.Value))
		}
	}
	if len(parts) == 0 {
		return name
	}
	return name + " " + strings.Join(parts, " and ")
}
