package cli

import (
	"bytes"
	"os"

	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/cli/views"
	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/internal/atomicfile"
	"poolc.dev/poolc/pools"
)

const fmtHelp = `Rewrites .hcl files in HCL's canonical layout (as hclwrite formats it)
and .cue files in CUE's (as cue fmt does), in place, and prints the name
of each file it changed. A file with a syntax error is reported and left
as it is.

With --check nothing is written: the names of the files that are not
formatted are printed, and the exit code says whether there were any.

Examples:
  poolc fmt pools/
  poolc fmt --check pools/      # in CI: fail when a file needs poolc fmt

Exit codes: 0 all files formatted (or, with --check, already formatted);
1 a file is not formatted (--check), a syntax error, or another error.`

func runFmt(a *arguments.Fmt, io Stdio) int {
	return formatFiles(a.Paths.Paths, a.Check, io)
}

func formatFiles(paths []string, check bool, io Stdio) int {
	names, diags := compiler.Discover(paths)
	unformatted := 0
	for _, name := range names {
		f, d := compiler.ReadFile(name)
		if d != nil {
			diags = append(diags, *d)
			continue
		}
		out, more := compiler.Format(f)
		if more.HasErrors() {
			diags = append(diags, more...)
			continue
		}
		if bytes.Equal(out, f.Src) {
			continue
		}
		unformatted++
		if !check {
			if err := rewrite(name, out); err != nil {
				diags.ErrorAt("write", pools.Pos{File: name}, "%v", err)
				continue
			}
		}
		views.Formatted(io.Out, name)
	}
	diags.Sort()
	writeDiagnostics(io, diags)
	if diags.HasErrors() || (check && unformatted > 0) {
		return ExitError
	}
	return ExitOK
}

func rewrite(name string, data []byte) error {
	st, err := os.Stat(name)
	if err != nil {
		return err
	}
	return atomicfile.Write(name, data, st.Mode().Perm())
}
