package views

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/compiler/render"
	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/pools"
)

// DiagForm is how findings are shown; a command that writes JSON chooses
// it once, so that every refusal, from any depth, comes out in the same
// form.
type DiagForm int

const (
	// DiagText writes findings to standard error, one per line, then a
	// count.
	DiagText DiagForm = iota
	// DiagTextColor is DiagText with the positions colored: red for
	// errors, yellow for warnings.
	DiagTextColor
	// DiagJSONDocument writes findings that include an error as one
	// indented JSON document on standard output (jsonDiagnostics), in
	// place of the document the command would have written.
	DiagJSONDocument
	// DiagJSONLine writes them as one line of an event stream, with
	// "event": "diagnostics".
	DiagJSONLine
)

// JSON reports whether the form writes JSON.
func (f DiagForm) JSON() bool { return f == DiagJSONDocument || f == DiagJSONLine }

// Diagnostics shows findings in form, out being standard output and errw
// standard error. In the JSON forms only findings that stop the command
// become a document; warnings alone stay text on standard error, so that
// standard output holds one document.
func Diagnostics(out, errw io.Writer, form DiagForm, diags pools.Diagnostics) {
	errs, warns := Count(diags)
	if errs > 0 && form.JSON() {
		doc := jsonDiagnostics{FormatVersion: JSONFormatVersion, Errors: errs, Warnings: warns, Diagnostics: toJSON(diags)}
		if form == DiagJSONLine {
			doc.Event = "diagnostics"
			json.NewEncoder(out).Encode(doc)
			return
		}
		JSON(out, errw, doc)
		return
	}
	for _, d := range diags {
		label := ""
		if d.Severity == pools.Warning {
			label = "warning: "
		}
		if d.Pos.IsZero() {
			fmt.Fprintf(errw, "%s%s\n", label, d.Message)
			continue
		}
		pos := d.Pos.String() + ":"
		if form == DiagTextColor {
			color := "\033[1;31m"
			if d.Severity == pools.Warning {
				color = "\033[1;33m"
			}
			pos = color + pos + "\033[0m"
		}
		fmt.Fprintf(errw, "%s %s%s\n", pos, label, d.Message)
	}
	if errs+warns > 0 {
		fmt.Fprintln(errw, CountText(errs, warns))
	}
}

// Count counts findings: errors and warnings.
func Count(diags pools.Diagnostics) (errs, warns int) {
	for _, d := range diags {
		if d.Severity == pools.Warning {
			warns++
		} else {
			errs++
		}
	}
	return errs, warns
}

// CountText is the line that closes text findings: "2 errors, 1 warning".
func CountText(errs, warns int) string {
	var parts []string
	if errs > 0 {
		parts = append(parts, plural.Count(errs, "error"))
	}
	if warns > 0 {
		parts = append(parts, plural.Count(warns, "warning"))
	}
	return strings.Join(parts, ", ")
}

// Validation shows a validation in text: the findings, or on success an
// optional summary of the pool and its memory estimates.
func Validation(out, errw io.Writer, form DiagForm, cfg *compiler.Config, diags pools.Diagnostics, summary bool) {
	Diagnostics(out, errw, form, diags)
	if !diags.HasErrors() && summary && cfg != nil {
		fmt.Fprintln(out, describePool(cfg))
		writeEstimates(out, cfg)
	}
}

// ValidationJSON shows a validation as one JSON document.
func ValidationJSON(out, errw io.Writer, cfg *compiler.Config, diags pools.Diagnostics) {
	doc := jsonValidation{FormatVersion: JSONFormatVersion, Valid: !diags.HasErrors(), Files: []string{}, Diagnostics: toJSON(diags)}
	if cfg != nil {
		doc.Files = cfg.Files
		if cfg.Pool != nil {
			doc.Pool = cfg.Pool.Name
		}
	}
	doc.Errors, doc.Warnings = Count(diags)
	JSON(out, errw, doc)
}

// JSON writes v as an indented JSON document to out; a failure to write
// it is told on errw.
func JSON(out, errw io.Writer, v any) {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(errw, "poolc: writing JSON: %v\n", err)
	}
}

// writeEstimates lists the models' memory estimates and the nodes' memory
// under the pool's desired placement, when any model has an estimate.
func writeEstimates(w io.Writer, cfg *compiler.Config) {
	if !render.HasEstimates(cfg.Pool) {
		return
	}
	fmt.Fprintln(w, "\nMemory estimated from GGUF headers:")
	for _, m := range cfg.Pool.Models {
		if m.Estimate == nil {
			continue
		}
		counts := "memory_gb absent: the estimate counts"
		if m.Declared {
			counts = "memory_gb " + pools.GB(m.MemoryGB) + " counts"
		}
		fmt.Fprintf(w, "  model %s: estimated %s for %s (%s); %s\n", m.Name, pools.GB(m.Estimate.GB), m.Estimate.Args, m.Estimate.Parts, counts)
	}
	render.MemoryText(w, render.Memory(cfg.Pool, compiler.Desired(cfg).Fleet))
}

// describePool is the one-line summary of a valid pool.
func describePool(cfg *compiler.Config) string {
	p := cfg.Pool
	members := 0
	for _, pp := range p.PodPools {
		members += len(pp.Members)
	}
	parts := []string{
		plural.Count(len(p.Nodes), "node"),
		plural.Count(len(p.Models), "model"),
		plural.Count(len(p.Lanes), "lane"),
		plural.Count(len(p.Aliases), "alias"),
	}
	if len(p.Profiles) > 0 {
		parts = append(parts, fmt.Sprintf("%s (active: %s)", plural.Count(len(p.Profiles), "profile"), p.ActiveProfile))
	}
	if len(p.PodPools) > 0 {
		parts = append(parts, fmt.Sprintf("%s with %s", plural.Count(len(p.PodPools), "pod pool"), plural.Count(members, "member")))
	}
	return fmt.Sprintf("pool %s is valid: %s", p.Name, strings.Join(parts, ", "))
}

// jsonDiagnostics is the document of a refusal in JSON: the command
// stopped on these findings.
type jsonDiagnostics struct {
	FormatVersion int              `json:"format_version"`
	Event         string           `json:"event,omitempty"`
	Valid         bool             `json:"valid"`
	Errors        int              `json:"errors"`
	Warnings      int              `json:"warnings"`
	Diagnostics   []jsonDiagnostic `json:"diagnostics"`
}

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
	FormatVersion int              `json:"format_version"`
	Valid         bool             `json:"valid"`
	Pool          string           `json:"pool,omitempty"`
	Files         []string         `json:"files"`
	Errors        int              `json:"errors"`
	Warnings      int              `json:"warnings"`
	Diagnostics   []jsonDiagnostic `json:"diagnostics"`
}

func toJSON(diags pools.Diagnostics) []jsonDiagnostic {
	out := make([]jsonDiagnostic, len(diags))
	for i, d := range diags {
		out[i] = jsonDiagnostic{Severity: d.Severity.String(), Code: d.Code, Message: d.Message,
			File: d.Pos.File, Line: d.Pos.Line, Column: d.Pos.Col, Path: d.Path}
	}
	return out
}
