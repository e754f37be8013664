// Package tree is the positioned value tree both front ends produce before
// the schema check: objects, lists and scalars, each with the file:line:col
// it was written at. HCL blocks and CUE structs become the same objects, so
// the schema check and the decoder see one shape whatever the language.
package tree

import (
	"fmt"
	"strconv"

	"poolc.dev/poolc/pools"
)

// MaxNesting is the deepest nesting either front end reads: brackets,
// braces, blocks, labels and operators inside one another, counted in
// the source before it is parsed. Pool files nest a handful of levels;
// the parsers and evaluators recurse once per level, so input nested
// hundreds of thousands deep would exhaust the stack and crash poolc
// instead of getting an error.
const MaxNesting = 1000

// Kind is the kind of a Value.
type Kind uint8

// The kinds of values.
const (
	// Null is the kind of a null value.
	Null Kind = iota
	// Bool is the kind of a boolean.
	Bool
	// Number is the kind of a number, whole or not.
	Number
	// String is the kind of a string.
	String
	// List is the kind of a list of values.
	List
	// Object is the kind of a struct: fields with values.
	Object
	// Invalid marks a value its front end already reported as broken; the
	// schema check passes over it without another message.
	Invalid
)

// String names the kind as messages do ("a number", "a list").
func (k Kind) String() string {
	switch k {
	case Bool:
		return "a bool"
	case Number:
		return "a number"
	case String:
		return "a string"
	case List:
		return "a list"
	case Object:
		return "a block"
	}
	return "null"
}

// Value is one node of the tree. Only the fields of its Kind are set.
type Value struct {
	Kind   Kind
	Pos    pools.Pos
	Str    string
	Num    float64
	Bool   bool
	Items  []*Value
	Fields []*Field
	// Sensitive says the pool file marks the value a secret (HCL's
	// sensitive(...), CUE's @poolc(sensitive)): poolc never prints it.
	Sensitive bool
}

// MarkSensitive marks v and every value inside it sensitive.
func MarkSensitive(v *Value) {
	if v == nil {
		return
	}
	v.Sensitive = true
	for _, item := range v.Items {
		MarkSensitive(item)
	}
	for _, f := range v.Fields {
		MarkSensitive(f.Value)
	}
}

// SensitivePaths lists the paths (object keys, "*" for any list item)
// of the sensitive values in v, outermost first: a marked object or list
// is one path, which covers everything inside it.
func SensitivePaths(v *Value) [][]string {
	var out [][]string
	var walk func(v *Value, at []string)
	walk = func(v *Value, at []string) {
		switch {
		case v == nil:
		case v.Sensitive:
			out = append(out, append([]string(nil), at...))
		default:
			for _, item := range v.Items {
				walk(item, append(at, "*"))
			}
			for _, f := range v.Fields {
				walk(f.Value, append(at, f.Key))
			}
		}
	}
	walk(v, nil)
	return out
}

// Field is one key of an object, in the order written.
type Field struct {
	Key    string
	KeyPos pools.Pos
	Value  *Value
}

// Get returns the field with the key, or nil.
func (v *Value) Get(key string) *Value {
	if v == nil {
		return nil
	}
	for _, f := range v.Fields {
		if f.Key == key {
			return f.Value
		}
	}
	return nil
}

// Describe shows a value in a message: strings quoted, numbers plain,
// composite values by kind.
func (v *Value) Describe() string {
	switch v.Kind {
	case String:
		return Clip(v.Str)
	case Number:
		if f := strconv.FormatFloat(v.Num, 'f', -1, 64); len(f) <= clipAt {
			return f
		}
		return strconv.FormatFloat(v.Num, 'g', -1, 64)
	case Bool:
		return strconv.FormatBool(v.Bool)
	}
	return v.Kind.String()
}

// clipAt is how many characters of a value a message quotes.
const clipAt = 64

// Clip quotes s for a message: whole when it is short, else its first
// characters and how many more there are, so a value of megabytes gives a
// message of a line.
func Clip(s string) string {
	r := []rune(s)
	if len(r) <= clipAt {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d more characters)", strconv.Quote(string(r[:clipAt])), len(r)-clipAt)
}

// StringAt returns the string at key of an object, or "" when v is nil or
// has no such field.
func (v *Value) StringAt(key string) string {
	if f := v.Get(key); f != nil {
		return f.Str
	}
	return ""
}

// NumberAt returns the number at key of an object, or 0 when v is nil or
// has no such field.
func (v *Value) NumberAt(key string) float64 {
	if f := v.Get(key); f != nil {
		return f.Num
	}
	return 0
}
