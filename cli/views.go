package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/pools"
)

// diagView shows the outcome of loading a pool, for people or machines.
type diagView interface {
	// Validation shows a validation: the findings, or on success an
	// optional summary of the pool.
	Validation(cfg *compiler.Config, diags pools.Diagnostics, summary bool)
}

func newDiagView(format string, io Stdio) (diagView, error) {
	switch format {
	case "text", "":
		return textView{io}, nil
	case "json":
		return jsonView{io}, nil
	}
	return nil, fmt.Errorf("unknown --format %q: want text or json", format)
}

type textView struct{ io Stdio }

func (v textView) Validation(cfg *compiler.Config, diags pools.Diagnostics, summary bool) {
	writeDiagnostics(v.io, diags)
	if !diags.HasErrors() && summary && cfg != nil {
		fmt.Fprintln(v.io.Out, describePool(cfg))
	}
}

// writeDiagnostics prints findings one per line, then a count.
func writeDiagnostics(io Stdio, diags pools.Diagnostics) {
	errs, warns := count(diags)
	for _, d := range diags {
		label := ""
		if d.Severity == pools.Warning {
			label = "warning: "
		}
		if d.Pos.IsZero() {
			fmt.Fprintf(io.Err, "%s%s\n", label, d.Message)
			continue
		}
		fmt.Fprintf(io.Err, "%s: %s%s\n", d.Pos, label, d.Message)
	}
	if errs+warns > 0 {
		fmt.Fprintln(io.Err, countText(errs, warns))
	}
}

func count(diags pools.Diagnostics) (errs, warns int) {
	for _, d := range diags {
		if d.Severity == pools.Warning {
			warns++
		} else {
			errs++
		}
	}
	return errs, warns
}

func countText(errs, warns int) string {
	var parts []string
	if errs > 0 {
		parts = append(parts, plural(errs, "error"))
	}
	if warns > 0 {
		parts = append(parts, plural(warns, "warning"))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, word string) string {
	switch {
	case n == 1:
		return "1 " + word
	case strings.HasSuffix(word, "s"):
		return fmt.Sprintf("%d %ses", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// describePool is the one-line summary of a valid pool.
func describePool(cfg *compiler.Config) string {
	p := cfg.Pool
	members := 0
	for _, pp := range p.PodPools {
		members += len(pp.Members)
	}
	parts := []string{
		plural(len(p.Nodes), "node"),
		plural(len(p.Models), "model"),
		plural(len(p.Lanes), "lane"),
		plural(len(p.Aliases), "alias"),
	}
	if len(p.Profiles) > 0 {
		parts = append(parts, fmt.Sprintf("%s (active: %s)", plural(len(p.Profiles), "profile"), p.ActiveProfile))
	}
	if len(p.PodPools) > 0 {
		parts = append(parts, fmt.Sprintf("%s with %s", plural(len(p.PodPools), "pod pool"), plural(members, "member")))
	}
	return fmt.Sprintf("pool %s is valid: %s", p.Name, strings.Join(parts, ", "))
}

type jsonView struct{ io Stdio }

// JSONFormatVersion is the version of poolc's JSON outputs; it changes
// only when a field changes meaning or goes away.
const JSONFormatVersion = "1"

type jsonDiagnostic struct {
	Severity string   `json:"severity"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	File     string   `json:"file,omitempty"`
	Line     int      `json:"line,omitempty"`
	Column   int      `json:"column,omitempty"`
	Path     []string `json:"path,omitempty"`
}

type jsonValidation struct {
	FormatVersion string           `json:"format_version"`
	Valid         bool             `json:"valid"`
	Pool          string           `json:"pool,omitempty"`
	Files         []string         `json:"files"`
	Errors        int              `json:"errors"`
	Warnings      int              `json:"warnings"`
	Diagnostics   []jsonDiagnostic `json:"diagnostics"`
}

func (v jsonView) Validation(cfg *compiler.Config, diags pools.Diagnostics, _ bool) {
	out := jsonValidation{FormatVersion: JSONFormatVersion, Valid: !diags.HasErrors(), Files: []string{}, Diagnostics: toJSON(diags)}
	if cfg != nil {
		out.Files = cfg.Files
		if cfg.Pool != nil {
			out.Pool = cfg.Pool.Name
		}
	}
	out.Errors, out.Warnings = count(diags)
	writeJSON(v.io, out)
}

func toJSON(diags pools.Diagnostics) []jsonDiagnostic {
	out := make([]jsonDiagnostic, len(diags))
	for i, d := range diags {
		out[i] = jsonDiagnostic{Severity: d.Severity.String(), Code: d.Code, Message: d.Message,
			File: d.Pos.File, Line: d.Pos.Line, Column: d.Pos.Col, Path: d.Path}
	}
	return out
}

func writeJSON(io Stdio, v any) {
	enc := json.NewEncoder(io.Out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(io.Err, "poolc: writing JSON: %v\n", err)
	}
}
