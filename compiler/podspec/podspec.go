// Package podspec reads the compact pod-pool member list operators
// already use:
//
//	context[@ssh_host][:capacity][#k3d-registry:port], ...
//
// Members are comma separated, earlier is higher priority. Split only cuts
// the list into its parts: the compiler turns each entry into the same
// member block a pool may write instead (member "context" { ssh_host =
// ..., capacity = ..., registry = ... }), so the schema's rules for
// contexts, hosts, capacities and registries are one set, checked in one
// place, whichever form the pool uses. Uniqueness of contexts is a rule of
// the whole pool and is checked there.
package podspec

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"poolc.dev/poolc/pools"
)

// Error is one problem in a member list. Offset is the byte offset in the
// list where the problem starts, so callers can point at the column.
type Error struct {
	Offset int
	Msg    string
}

// Part is one part of an entry as written, with its byte offset in the
// list. Set says whether the entry has the part at all (a@h has no
// capacity; a@ has an empty host).
type Part struct {
	Text   string
	Offset int
	Set    bool
}

// Entry is one member of a list, cut into its parts; nothing in it is
// checked yet.
type Entry struct {
	Context, SSHHost, Capacity, Registry Part
}

// Syntax is the form of a member list, for messages.
const Syntax = "context[@ssh_host][:capacity][#k3d-registry:port], ..."

// Split cuts a member list into entries. Its only errors are those of the
// list's shape: an empty list and an empty entry between commas.
func Split(list string) ([]Entry, []Error) {
	if strings.TrimSpace(list) == "" {
		return nil, []Error{{0, "member list is empty: want " + Syntax}}
	}
	var entries []Entry
	var errs []Error
	off := 0
	for i, raw := range strings.Split(list, ",") {
		entry := strings.TrimSpace(raw)
		start := off + len(raw) - len(strings.TrimLeftFunc(raw, unicode.IsSpace))
		off += len(raw) + 1
		if entry == "" {
			errs = append(errs, Error{start, fmt.Sprintf("member %d: empty entry between commas", i+1)})
			continue
		}
		entries = append(entries, cut(entry, start))
	}
	return entries, errs
}

// cut splits one entry, which starts at byte off of its list.
func cut(entry string, off int) Entry {
	var e Entry
	rest := entry
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		e.Registry = Part{rest[i+1:], off + i + 1, true}
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		e.Capacity = Part{rest[i+1:], off + i + 1, true}
		rest = rest[:i]
	}
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		e.SSHHost = Part{rest[i+1:], off + i + 1, true}
		rest = rest[:i]
	}
	e.Context = Part{rest, off, true}
	return e
}

// ParseRegistry reads k3d-NAME:PORT, a registry the schema has checked.
func ParseRegistry(s string) (pools.Registry, error) {
	name, port, ok := strings.Cut(s, ":")
	p, err := strconv.Atoi(port)
	if !ok || !strings.HasPrefix(name, "k3d-") || err != nil || p < 1 || p > 65535 {
		return pools.Registry{}, fmt.Errorf("registry %q must be k3d-NAME:PORT with a port from 1 to 65535", s)
	}
	return pools.Registry{Name: name, Port: p}, nil
}

// Format writes members in the compact form, which Split reads back.
func Format(members []pools.Member) string {
	parts := make([]string, len(members))
	for i, m := range members {
		s := m.Context
		if m.SSHHost != "" {
			s += "@" + m.SSHHost
		}
		if m.Capacity != pools.DefaultCapacity {
			s += ":" + strconv.Itoa(m.Capacity)
		}
		if !m.Registry.IsZero() {
			s += "#" + m.Registry.String()
		}
		parts[i] = s
	}
	return strings.Join(parts, ",")
}
