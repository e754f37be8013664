// Command poolgen writes a large, valid pool in HCL or CUE, for benchmarks
// and for trying poolc on a fleet of realistic size; see `poolgen --help`.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"poolc.dev/poolc/internal/poolgen"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const help = `Usage: poolgen [flags]

Writes a generated pool that poolc validates without findings: nodes with
memory and labels, models that fit every node, lanes placed on two or
three candidate nodes with a mix of residencies and a port free on each
candidate, aliases with fallbacks, two profiles (one active, one that
cordons a few nodes), and a pod pool whose members use the compact form
context@host:capacity#k3d-registry:port. The same flags and seed always
give the same file.

Examples:
  poolgen --nodes 1000 --lanes 10000 --members 100 --out big.hcl
  poolgen --nodes 1000 --lanes 10000 --members 100 --out big.cue
  poolgen --lang cue --seed 7 | less
  poolgen --nodes 10000 --lanes 100000 --members 1000 --files 4 --out big/

The language follows --out's extension (.hcl or .cue) unless --lang says
it; poolc reads a file by its extension, so the two must agree.

--files N writes the pool as N files in the directory --out (created if
missing), named NAME-1.hcl to NAME-N.hcl (or .cue; --lang says which,
hcl by default), which poolc loads as one pool: poolc counts the tokens
of each HCL file against a bound, and a pool past 80,000 lanes or so
passes it in one file. A pool past 16 MiB in all (about 90,000 lanes)
is read only with POOLC_MAX_POOL_MIB set above 16.

Exit codes: 0 written, 1 bad usage or an error.

Flags:
`

// run is poolgen without the process: it parses args, writes the pool
// and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("poolgen", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() {}
	opts := poolgen.Options{}
	fs.IntVar(&opts.Nodes, "nodes", 10, "number of nodes (at least 2)")
	fs.IntVar(&opts.Lanes, "lanes", 50, "number of lanes")
	fs.IntVar(&opts.Members, "members", 4, "number of pod-pool members (0: no pod pool)")
	lang := fs.String("lang", "", "language: hcl or cue (default: from --out, else hcl)")
	fs.Int64Var(&opts.Seed, "seed", 1, "seed; the same seed gives the same pool")
	fs.StringVar(&opts.Name, "name", poolgen.DefaultName, "name of the pool")
	out := fs.StringP("out", "o", "", "file to write (default: standard output), or with --files the directory")
	parts := fs.Int("files", 1, "number of files to write the pool in, into the directory --out")
	err := fs.Parse(args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		fmt.Fprint(stdout, help+fs.FlagUsages())
		return 0
	case err != nil:
		return usage(stderr, "%v", err)
	case fs.NArg() > 0:
		return usage(stderr, "unexpected argument %q", fs.Arg(0))
	}
	if *parts != 1 {
		return writeParts(stderr, *parts, *lang, *out, opts)
	}
	l, err := language(*lang, *out)
	if err != nil {
		return usage(stderr, "%v", err)
	}
	var buf bytes.Buffer
	if err := poolgen.Write(&buf, l, opts); err != nil {
		return usage(stderr, "%v", err)
	}
	if *out == "" || *out == "-" {
		_, err = stdout.Write(buf.Bytes())
	} else {
		err = os.WriteFile(*out, buf.Bytes(), 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "poolgen: %v\n", err)
		return 1
	}
	return 0
}

// writeParts writes the pool as parts files in the directory out.
func writeParts(stderr io.Writer, parts int, lang, out string, opts poolgen.Options) int {
	switch {
	case parts < 1:
		return usage(stderr, "--files is %d: want 1 or more", parts)
	case out == "" || out == "-":
		return usage(stderr, "--files %d: want --out DIR, the directory to write the files in", parts)
	case lang == "":
		lang = string(poolgen.HCL)
	case lang != string(poolgen.HCL) && lang != string(poolgen.CUE):
		return usage(stderr, "unknown --lang %q: want hcl or cue", lang)
	}
	name := opts.Name
	if name == "" {
		name = poolgen.DefaultName
	}
	files, err := poolgen.Parts(poolgen.Language(lang), opts, parts)
	if err != nil {
		return usage(stderr, "%v", err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintf(stderr, "poolgen: %v\n", err)
		return 1
	}
	for i, data := range files {
		file := filepath.Join(out, fmt.Sprintf("%s-%d.%s", name, i+1, lang))
		if err := os.WriteFile(file, data, 0o644); err != nil {
			fmt.Fprintf(stderr, "poolgen: %v\n", err)
			return 1
		}
	}
	return 0
}

func usage(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "poolgen: %s\nRun 'poolgen --help' for usage.\n", fmt.Sprintf(format, args...))
	return 1
}

// language picks the output language from --lang and --out's extension.
func language(flag, out string) (poolgen.Language, error) {
	ext := strings.TrimPrefix(filepath.Ext(out), ".")
	if out == "-" {
		ext = ""
	}
	switch {
	case flag != "" && flag != string(poolgen.HCL) && flag != string(poolgen.CUE):
		return "", fmt.Errorf("unknown --lang %q: want hcl or cue", flag)
	case out != "" && out != "-" && ext != string(poolgen.HCL) && ext != string(poolgen.CUE):
		return "", fmt.Errorf("--out %s: want a .hcl or .cue file, so poolc can read it", out)
	case flag != "" && ext != "" && flag != ext:
		return "", fmt.Errorf("--lang %s but --out %s: poolc would read it as %s", flag, out, ext)
	case flag != "":
		return poolgen.Language(flag), nil
	case ext != "":
		return poolgen.Language(ext), nil
	}
	return poolgen.HCL, nil
}
