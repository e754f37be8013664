package schema

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"poolc.dev/poolc/compiler/suggest"
	"poolc.dev/poolc/compiler/tree"
	"poolc.dev/poolc/pools"
)

// Check checks a pool document against the schema's #File and reports
// every finding, not only the first. Where the document is sound it fills
// in the schema's defaults for absent optional fields, so the decoder reads
// one complete shape.
func Check(doc *tree.Value) pools.Diagnostics {
	return CheckAgainst(doc, Root())
}

// CheckAgainst is Check for another kind of document, whose top level is
// root (ScenarioRoot for a scenario file).
func CheckAgainst(doc *tree.Value, root *Spec) pools.Diagnostics {
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
func (c *checker) value(v *tree.Value, s *Spec, w where, subject string) {
	if s.Kinds == KindAny || v.Kind == tree.Invalid {
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
		if s.Kinds&KindMap != 0 {
			c.mapping(v, s, w, subject)
		} else {
			c.object(v, s, w.in(subject), v.Pos)
		}
	}
}

func kindOf(v *tree.Value) Kinds {
	switch v.Kind {
	case tree.Bool:
		return KindBool
	case tree.Number:
		return KindNumber
	case tree.String:
		return KindString
	case tree.List:
		return KindList
	case tree.Object:
		return KindStruct | KindMap
	}
	return 0
}

// MaxInt is the largest magnitude of an integer field: every integer up
// to it is exact as a float64 (the numbers of the tree) and fits an int
// of the IR, so 99999999999999999999 never wraps round to a negative.
const MaxInt = 1 << 53

func (c *checker) number(v *tree.Value, s *Spec, w where, subject string) {
	ok := !math.IsInf(v.Num, 0) && !math.IsNaN(v.Num)
	if ok && s.Int && v.Num != math.Trunc(v.Num) {
		ok = false
	}
	if ok && s.Int && math.Abs(v.Num) > MaxInt {
		c.errorf("out-of-range", v.Pos, w.say(subject, "must be %s, and no larger than %s, got %s", expected(s), pools.Num(MaxInt), v.Describe()))
		return
	}
	if ok && s.Min != nil && !s.Min.allows(v.Num, 1) {
		ok = false
	}
	if ok && s.Max != nil && !s.Max.allows(v.Num, -1) {
		ok = false
	}
	if ok && s.Enum != nil && !enumHas(s.Enum, Literal{Kind: KindNumber, Num: v.Num}) {
		ok = false
	}
	if !ok {
		c.errorf("out-of-range", v.Pos, w.say(subject, "must be %s, got %s", expected(s), v.Describe()))
	}
}

func (c *checker) string(v *tree.Value, s *Spec, w where, subject string) {
	if s.Enum != nil && !enumHas(s.Enum, Literal{Kind: KindString, Str: v.Str}) {
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

func enumHas(enum []Literal, l Literal) bool {
	for _, e := range enum {
		if e == l {
			return true
		}
	}
	return false
}

// mapping checks an object whose keys are names: `node "spark-01" {...}`.
func (c *checker) mapping(v *tree.Value, s *Spec, w where, subject string) {
	for _, f := range v.Fields {
		if s.Key != nil && s.Key.Kinds == KindString {
			key := &tree.Value{Kind: tree.String, Str: f.Key, Pos: f.KeyPos}
			c.string(key, s.Key, w, subject+" name")
		}
		name := subject + " " + strconv.Quote(f.Key)
		if s.Elem.Kinds == KindStruct && f.Value.Kind == tree.Object {
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
func (c *checker) object(v *tree.Value, s *Spec, w where, at pools.Pos) {
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
func allDefaulted(s *Spec) bool {
	if s.Kinds != KindStruct {
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

func missing(w where, fs *Field) string {
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
func unknownField(w where, key string, s *Spec) (msg, meant string) {
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

func literalValue(l Literal) *tree.Value {
	switch l.Kind {
	case KindString:
		return &tree.Value{Kind: tree.String, Str: l.Str}
	case KindBool:
		return &tree.Value{Kind: tree.Bool, Bool: l.Bool}
	}
	return &tree.Value{Kind: tree.Number, Num: l.Num}
}

// expected describes what a spec accepts, for "must be ..." messages.
func expected(s *Spec) string {
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
		k    Kinds
		name string
	}{{KindBool, "true or false"}, {KindNumber, "a number"}, {KindString, "a string"}, {KindList, "a list"}, {KindStruct, "a block"}, {KindMap, "a block"}} {
		if s.Kinds&k.k == 0 {
			continue
		}
		name := k.name
		if k.k == KindNumber {
			name = numberPhrase(s)
		}
		if k.k == KindList && s.Elem != nil && s.Elem.Kinds == KindString {
			name = "a list of strings"
		}
		kinds = append(kinds, name)
	}
	sort.Strings(kinds)
	return strings.Join(kinds, " or ")
}

// definitionPhrase turns "#Name is a lowercase name: ..." into "a
// lowercase name: ...".
func definitionPhrase(s *Spec) string {
	_, rest, ok := strings.Cut(s.Doc, " is ")
	if !ok {
		return ""
	}
	return strings.TrimSuffix(rest, ".")
}

func numberPhrase(s *Spec) string {
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
