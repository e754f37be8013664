// Package spelling checks names against a rule of which bytes they are
// spelled with and how long they are: the lane, model and alias names the
// actuators put into commands, files and maps on a node, tags and host
// names. A rule does what a regular expression such as
// ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ does, without compiling one: Go's
// regexp turns a counted repetition into one state per count, so each
// such pattern cost about 0.1 ms and 120 KB at every start of poolc,
// whatever the command.
package spelling

import (
	"fmt"
	"strings"
)

// Rule is a spelling: Min to Max bytes, the first one of the bytes First
// lists and every other one of those Rest lists.
type Rule struct {
	first, rest    [256]bool
	firstSpec      string
	restSpec       string
	minLen, maxLen int
}

// New is the rule of names of min to max bytes (1 <= min <= max) spelled
// with a byte of first and then bytes of rest. first and rest list bytes
// as a regular expression's bracket expression does: single ASCII
// characters and ranges such as a-z, a '-' last standing for itself; ']',
// '\' and '^' are not allowed.
func New(first, rest string, min, max int) *Rule {
	if min < 1 || max < min {
		panic(fmt.Sprintf("spelling.New: lengths %d..%d", min, max))
	}
	return &Rule{first: set(first), rest: set(rest), firstSpec: first, restSpec: rest, minLen: min, maxLen: max}
}

// set is the set of bytes spec lists.
func set(spec string) [256]bool {
	if strings.ContainsAny(spec, `]\^`) || spec == "" {
		panic(fmt.Sprintf("spelling: bytes %q: want characters and ranges a-z only", spec))
	}
	var s [256]bool
	for i := 0; i < len(spec); i++ {
		lo, hi := spec[i], spec[i]
		if i+2 < len(spec) && spec[i+1] == '-' {
			hi = spec[i+2]
			i += 2
		}
		if lo > hi || hi >= 0x80 {
			panic(fmt.Sprintf("spelling: bytes %q: range %c-%c", spec, lo, hi))
		}
		for b := int(lo); b <= int(hi); b++ {
			s[b] = true
		}
	}
	return s
}

// Allows reports whether name is spelled by the rule.
func (r *Rule) Allows(name string) bool {
	if len(name) < r.minLen || len(name) > r.maxLen || !r.first[name[0]] {
		return false
	}
	for i := 1; i < len(name); i++ {
		if !r.rest[name[i]] {
			return false
		}
	}
	return true
}

// Pattern is the regular expression (RE2 syntax, as Go and CUE take it)
// that matches exactly the names the rule allows, for a schema that
// states the rule.
func (r *Rule) Pattern() string {
	return fmt.Sprintf("^[%s][%s]{%d,%d}$", r.firstSpec, r.restSpec, r.minLen-1, r.maxLen-1)
}

// The names poolc's actuators take from a request and write on a node.
var (
	// Name is a lane's or a model's name: a letter or a digit, then up to
	// 127 letters, digits, '.', '_' or '-'.
	Name = New("A-Za-z0-9", "A-Za-z0-9._-", 1, 128)
	// Alias is an alias clients ask for: as Name, with ':', '/', '@' and
	// '+' allowed after the first byte (no comma, no space).
	Alias = New("A-Za-z0-9", "A-Za-z0-9._:/@+-", 1, 128)
)
