// Package podspec parses the compact pod-pool member list operators
// already use:
//
//	context[@ssh_host][:capacity][#k3d-registry:port], ...
//
// Members are comma separated, earlier is higher priority. Capacity is an
// integer >= 1 and defaults to 2; a registry is k3d-NAME:PORT with a port in
// 1..65535. A context, host or registry name holds letters, digits, '.',
// '_' and '-' only, so no member can smuggle shell syntax into a command.
// Uniqueness of contexts is a rule of the whole pool and is checked there.
package podspec

import (
	"fmt"
	"strconv"
	"strings"

	"poolc.dev/poolc/pools"
)

// Error is one problem in a member list. Offset is the byte offset in the
// list where the problem starts, so callers can point at the column.
type Error struct {
	Offset int
	Msg    string
}

// Error returns the message.
func (e Error) Error() string { return e.Msg }

// Entry is one member read from a list, with the byte offset where it
// starts in the list.
type Entry struct {
	pools.Member
	Offset int
}

// Parse reads a member list. It reports every problem it finds, not only
// the first, and returns the members it could read.
func Parse(list string) ([]Entry, []Error) {
	if strings.TrimSpace(list) == "" {
		return nil, []Error{{0, "member list is empty: want context[@ssh_host][:capacity][#k3d-registry:port], ..."}}
	}
	var members []Entry
	var errs []Error
	off := 0
	for i, raw := range strings.Split(list, ",") {
		start := off + len(raw) - len(strings.TrimLeft(raw, " \t\n"))
		off += len(raw) + 1
		entry := strings.TrimSpace(raw)
		m, e := parseMember(entry, start, i+1)
		errs = append(errs, e...)
		if len(e) == 0 {
			members = append(members, Entry{m, start})
		}
	}
	return members, errs
}

func parseMember(entry string, off, n int) (pools.Member, []Error) {
	var errs []Error
	bad := func(at int, format string, args ...any) {
		errs = append(errs, Error{off + at, fmt.Sprintf("member %d %q: ", n, entry) + fmt.Sprintf(format, args...)})
	}
	if entry == "" {
		bad(0, "empty entry between commas")
		return pools.Member{}, errs
	}
	m := pools.Member{Capacity: pools.DefaultCapacity}
	rest := entry
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		reg, err := ParseRegistry(rest[i+1:])
		if err != nil {
			bad(i+1, "%v", err)
		}
		m.Registry = reg
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		c, err := strconv.Atoi(rest[i+1:])
		if err != nil || c < 1 {
			bad(i+1, "capacity %q must be an integer >= 1", rest[i+1:])
		}
		m.Capacity = c
		rest = rest[:i]
	}
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		m.SSHHost = rest[i+1:]
		if !isName(m.SSHHost) {
			bad(i+1, "ssh host %q must be a host name of letters, digits, '.', '_' and '-'", m.SSHHost)
		}
		rest = rest[:i]
	}
	m.Context = rest
	if !isName(m.Context) {
		bad(0, "context %q must be letters, digits, '.', '_' and '-'", m.Context)
	}
	return m, errs
}

// ParseRegistry reads k3d-NAME:PORT.
func ParseRegistry(s string) (pools.Registry, error) {
	name, port, ok := strings.Cut(s, ":")
	if !ok {
		return pools.Registry{}, fmt.Errorf("registry %q must be k3d-NAME:PORT", s)
	}
	if !strings.HasPrefix(name, "k3d-") || !isName(name) || len(name) == len("k3d-") {
		return pools.Registry{}, fmt.Errorf("registry name %q must start with \"k3d-\" and hold letters, digits, '.', '_' and '-'", name)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return pools.Registry{}, fmt.Errorf("registry port %q must be an integer from 1 to 65535", port)
	}
	return pools.Registry{Name: name, Port: p}, nil
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			return false
		}
	}
	return true
}

// Members returns the members of the entries.
func Members(entries []Entry) []pools.Member {
	out := make([]pools.Member, len(entries))
	for i, e := range entries {
		out[i] = e.Member
	}
	return out
}

// Format writes members back in the compact form, the inverse of Parse.
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
