package cli

import (
	"fmt"
	"io"

	"poolc.dev/poolc/cli/views"
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
	views.Validation(v.io.Out, v.io.Err, v.io.diags, cfg, diags, summary)
}

type jsonView struct{ io Stdio }

func (v jsonView) Validation(cfg *compiler.Config, diags pools.Diagnostics, _ bool) {
	views.ValidationJSON(v.io.Out, v.io.Err, cfg, diags)
}

// writeDiagnostics shows findings in the form the command chose
// (views.Diagnostics).
func writeDiagnostics(io Stdio, diags pools.Diagnostics) {
	views.Diagnostics(io.Out, io.Err, io.diags, diags)
}

// fail shows an error of a command that has no position (a lock held, a
// stale plan) in the command's form and returns ExitError.
func fail(io Stdio, command, message string) int {
	if io.diags.JSON() {
		writeDiagnostics(io, pools.Diagnostics{{Severity: pools.Error, Code: command, Message: message}})
		return ExitError
	}
	views.Failure(io.Err, command, message)
	return ExitError
}

// diagFormFor is the form of findings for a command writing JSON (as one
// document, or as lines of an event stream) or text.
func diagFormFor(asJSON, lines bool, errStream io.Writer, noColor bool) views.DiagForm {
	switch {
	case asJSON && lines:
		return views.DiagJSONLine
	case asJSON:
		return views.DiagJSONDocument
	}
	return textDiagForm(errStream, noColor)
}

// textDiagForm is the text form for findings on a stream: colored on a
// terminal unless --no-color or NO_COLOR says otherwise.
func textDiagForm(w io.Writer, noColor bool) views.DiagForm {
	if useColor(w, noColor) {
		return views.DiagTextColor
	}
	return views.DiagText
}
