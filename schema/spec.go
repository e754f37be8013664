package schema

import (
	"regexp"
	"strconv"
)

// Kinds is a set of value kinds a Spec accepts.
type Kinds uint8

// The kinds a Spec may accept; a whole number is a KindNumber with
// Spec.Int set.
const (
	// KindBool accepts a boolean.
	KindBool Kinds = 1 << iota
	// KindNumber accepts a number.
	KindNumber
	// KindString accepts a string.
	KindString
	// KindList accepts a list.
	KindList
	// KindStruct accepts a closed struct of fixed fields.
	KindStruct
	// KindMap accepts a struct of any keys matching Key, each value an
	// Elem.
	KindMap
	// KindAny accepts anything: an open struct or top.
	KindAny
)

// Spec is the Go reading of one CUE constraint of the schema: what kinds
// of value it accepts and the rules each kind must follow. It is built once
// from the embedded .cue files and never written by hand.
type Spec struct {
	Kinds Kinds
	// Name is the definition this spec came from ("#Lane"), if any.
	Name string
	// Doc is the definition's or field's doc comment, first sentence.
	Doc string

	// Int requires a whole number.
	Int bool
	// Min and Max bound numbers; nil means unbounded.
	Min, Max *Bound
	// Enum lists the only values allowed (strings or numbers), in schema order.
	Enum []Literal
	// Patterns are regular expressions strings must match.
	Patterns []*regexp.Regexp
	// NotEqual lists strings that are not allowed.
	NotEqual []string
	// Default is the value used when an optional field is absent.
	Default *Literal

	// Fields are the fields of a KindStruct, in schema order.
	Fields []*Field
	// Key constrains the keys of a KindMap; Elem is the value of each key of
	// a KindMap and each item of a KindList.
	Key, Elem *Spec
}

// Field is one field of a struct spec.
type Field struct {
	Name     string
	Required bool
	Doc      string
	Spec     *Spec
}

// Bound is one end of a numeric range.
type Bound struct {
	Value     float64
	Inclusive bool
}

// Literal is a concrete scalar of the schema: an enumeration member or a
// default.
type Literal struct {
	Kind Kinds // KindString, KindNumber or KindBool
	Str  string
	Num  float64
	Bool bool
}

// String shows the literal as CUE and HCL both write it.
func (l Literal) String() string {
	switch l.Kind {
	case KindString:
		return strconv.Quote(l.Str)
	case KindBool:
		return strconv.FormatBool(l.Bool)
	}
	return strconv.FormatFloat(l.Num, 'f', -1, 64)
}

// Field returns the named field of a struct spec, or nil.
func (s *Spec) Field(name string) *Field {
	for _, f := range s.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// MatchesPatterns reports whether str matches every pattern of the spec,
// so that code outside the compiler (an actuator checking a step's field)
// applies the schema's own rule instead of restating it.
func (s *Spec) MatchesPatterns(str string) bool {
	for _, re := range s.Patterns {
		if !re.MatchString(str) {
			return false
		}
	}
	return true
}

// Accepts reports whether the spec accepts values of kind k.
func (s *Spec) Accepts(k Kinds) bool { return s.Kinds&k != 0 || s.Kinds&KindAny != 0 }

// InRange reports whether x lies within the spec's Min and Max, where
// they are set.
func (s *Spec) InRange(x float64) bool {
	return (s.Min == nil || s.Min.allows(x, 1)) && (s.Max == nil || s.Max.allows(x, -1))
}

func (b *Bound) allows(x, sign float64) bool {
	if b.Inclusive {
		return x*sign >= b.Value*sign
	}
	return x*sign > b.Value*sign
}
