package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"poolc.dev/poolc/cli/views"
	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/compiler/render"
	"poolc.dev/poolc/internal/plural"
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
		writeEstimates(v.io.Out, cfg)
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

// diagForm is how findings are shown.
type diagForm int

const (
	// diagText writes findings to standard error, one per line, then a
	// count.
	diagText diagForm = iota
	// diagTextColor is diagText with the positions colored: red for
	// errors, yellow for warnings.
	diagTextColor
	// diagJSONDocument writes findings that include an error as one
	// indented JSON document on standard output (jsonDiagnostics), in
	// place of the document the command would have written.
	diagJSONDocument
	// diagJSONLine writes them as one line of an event stream, with
	// "event": "diagnostics".
	diagJSONLine
)

// writeDiagnostics shows findings in the form the command chose. In the
// JSON forms only findings that stop the command become a document;
// warnings alone stay text on standard error, so that standard output
// holds one document.
func writeDiagnostics(io Stdio, diags pools.Diagnostics) {
	errs, warns := count(diags)
	if errs > 0 && (io.diags == diagJSONDocument || io.diags == diagJSONLine) {
		doc := jsonDiagnostics{FormatVersion: JSONFormatVersion, Errors: errs, Warnings: warns, Diagnostics: toJSON(diags)}
		if io.diags == diagJSONLine {
			doc.Event = "diagnostics"
			json.NewEncoder(io.Out).Encode(doc)
			return
		}
		writeJSON(io, doc)
		return
	}
	for _, d := range diags {
		label := ""
		if d.Severity == pools.Warning {
			label = "warning: "
		}
		if d.Pos.IsZero() {
			fmt.Fprintf(io.Err, "%s%s\n", label, d.Message)
			continue
		}
		pos := d.Pos.String() + ":"
		if io.diags == diagTextColor {
			color := "\033[1;31m"
			if d.Severity == pools.Warning {
				color = "\033[1;33m"
			}
			pos = color + pos + "\033[0m"
		}
		fmt.Fprintf(io.Err, "%s %s%s\n", pos, label, d.Message)
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
		parts = append(parts, plural.Count(errs, "error"))
	}
	if warns > 0 {
		parts = append(parts, plural.Count(warns, "warning"))
	}
	return strings.Join(parts, ", ")
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

type jsonView struct{ io Stdio }

// JSONFormatVersion is the version of poolc's JSON outputs (a number in
// every document); it changes only when a field changes meaning or goes
// away.
const JSONFormatVersion = views.JSONFormatVersion

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

// fail shows an error of a command that has no position (a lock held, a
// stale plan) in the command's form and returns ExitError.
func fail(io Stdio, command, message string) int {
	if io.diags == diagJSONDocument || io.diags == diagJSONLine {
		writeDiagnostics(io, pools.Diagnostics{{Severity: pools.Error, Code: command, Message: message}})
		return ExitError
	}
	fmt.Fprintf(io.Err, "poolc %s: %s\n", command, message)
	return ExitError
}

// diagFormFor is the form of findings for a command writing JSON (as one
// document, or as lines of an event stream) or text.
func diagFormFor(asJSON, lines bool, errStream io.Writer, noColor bool) diagForm {
	switch {
	case asJSON && lines:
		return diagJSONLine
	case asJSON:
		return diagJSONDocument
	}
	return textDiagForm(errStream, noColor)
}

// textDiagForm is the text form for findings on a stream: colored on a
// terminal unless --no-color or NO_COLOR says otherwise.
func textDiagForm(w io.Writer, noColor bool) diagForm {
	if useColor(w, noColor) {
		return diagTextColor
	}
	return diagText
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
