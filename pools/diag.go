package pools

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Pos is a place in a source file; Line and Col count from 1. The zero Pos
// means "no position known".
type Pos struct {
	File string
	Line int
	Col  int
}

// IsZero reports whether the position is unknown.
func (p Pos) IsZero() bool { return p.File == "" }

// String returns file:line:col, or just the file when the line is unknown.
func (p Pos) String() string {
	switch {
	case p.IsZero():
		return ""
	case p.Line == 0:
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Path names an attribute of the configuration from the top of the pool,
// for example Path{"lane", "video", "model"}.
type Path []string

// String returns the path with dots: lane.video.model.
func (p Path) String() string { return strings.Join(p, ".") }

// Severity says whether a diagnostic stops the pipeline.
type Severity int

const (
	// Error findings make the configuration invalid.
	Error Severity = iota
	// Warning findings are reported but do not fail validation.
	Warning
)

// String returns "error" or "warning".
func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// Diagnostic is one finding. Code is a stable identifier for scripts
// (for example "unknown-field"); Message is the sentence shown to people
// and names the numbers or names that break the rule. Path is set by code
// that cannot see the source; Pos is attached from the SourceMap.
type Diagnostic struct {
	Severity Severity
	Code     string
	Message  string
	Path     Path
	Pos      Pos
}

// Diagnostics is a list of findings. The methods keep it sortable and
// printable; Err turns it into an error when it holds errors.
type Diagnostics []Diagnostic

// Errorf appends an error with the given code, at the given path.
func (ds *Diagnostics) Errorf(code string, path Path, format string, args ...any) {
	*ds = append(*ds, Diagnostic{Severity: Error, Code: code, Path: path, Message: fmt.Sprintf(format, args...)})
}

// ErrorAt appends an error at a known source position.
func (ds *Diagnostics) ErrorAt(code string, pos Pos, format string, args ...any) {
	*ds = append(*ds, Diagnostic{Severity: Error, Code: code, Pos: pos, Message: fmt.Sprintf(format, args...)})
}

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Sort orders the diagnostics by file, line, column, message, and drops
// exact duplicates.
func (ds *Diagnostics) Sort() {
	s := *ds
	sort.SliceStable(s, func(i, j int) bool {
		a, b := s[i], s[j]
		if a.Pos.File != b.Pos.File {
			return a.Pos.File < b.Pos.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col < b.Pos.Col
		}
		return a.Message < b.Message
	})
	out := s[:0]
	for i, d := range s {
		if i > 0 && d.Pos == s[i-1].Pos && d.Message == s[i-1].Message {
			continue
		}
		out = append(out, d)
	}
	*ds = out
}

// String renders one diagnostic as "file:line:col: message".
func (d Diagnostic) String() string {
	if d.Pos.IsZero() {
		return d.Message
	}
	return d.Pos.String() + ": " + d.Message
}

// Err returns an error listing the errors, or nil when there are none.
func (ds Diagnostics) Err() error {
	if !ds.HasErrors() {
		return nil
	}
	return diagError(ds)
}

type diagError Diagnostics

func (e diagError) Error() string {
	lines := make([]string, 0, len(e))
	for _, d := range e {
		lines = append(lines, d.String())
	}
	return strings.Join(lines, "\n")
}

// SourceMap records where each attribute path was written, so diagnostics
// reported by path can be given a file:line:col: positions set one by one,
// and documents that find a path's position when asked (a 100,000-lane
// pool writes some 1.5 million, of which a command looks up a few).
type SourceMap struct {
	set  map[string]Pos
	docs []Locator
}

// Locator finds where a path was written in one document, if it was.
type Locator interface {
	Locate(p Path) (Pos, bool)
}

// Set records the position of a path; it takes precedence over the
// documents'.
func (m *SourceMap) Set(p Path, pos Pos) {
	if m.set == nil {
		m.set = map[string]Pos{}
	}
	m.set[p.key()] = pos
}

// Add adds a document whose positions Lookup finds, before those of the
// documents added earlier.
func (m *SourceMap) Add(doc Locator) { m.docs = append(m.docs, doc) }

// find returns the position of exactly path p, if it has one.
func (m SourceMap) find(p Path) (Pos, bool) {
	if pos, ok := m.set[p.key()]; ok {
		return pos, true
	}
	for i := len(m.docs) - 1; i >= 0; i-- {
		if pos, ok := m.docs[i].Locate(p); ok {
			return pos, true
		}
	}
	return Pos{}, false
}

// MemberPath is where member i of a pod pool was written, in either the
// compact list or a member block.
func MemberPath(podPool string, i int) Path {
	return Path{"pod_pool", podPool, "members", strconv.Itoa(i)}
}

// key joins the path with a separator no name can contain, since names
// may contain dots.
func (p Path) key() string { return strings.Join(p, "\x1f") }

// Lookup returns the position of the path, or of its nearest ancestor that
// has one.
func (m SourceMap) Lookup(p Path) Pos {
	for n := len(p); n >= 0; n-- {
		if pos, ok := m.find(p[:n]); ok {
			return pos
		}
	}
	return Pos{}
}

// Attach gives every diagnostic without a position the position of its path.
func (m SourceMap) Attach(ds Diagnostics) {
	for i := range ds {
		if ds[i].Pos.IsZero() && ds[i].Path != nil {
			ds[i].Pos = m.Lookup(ds[i].Path)
		}
	}
}
