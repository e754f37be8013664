// Command docgen writes poolc's generated references: the command
// reference from each command's own --help, and the language references
// from the embedded CUE schema (schema/pool.cue, schema/scenario.cue), so
// neither is written twice. Run it from the repository's root after
// changing a command's help or the schema:
//
//	go run ./internal/docgen
//
// Its test fails, naming this command, when a file it writes is not what
// it would write now.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	root := flag.String("root", ".", "the repository's root, where docs/reference is written")
	flag.Parse()
	refs, err := references()
	if err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
	for _, r := range refs {
		path := filepath.Join(*root, r.path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "docgen:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(path, []byte(r.text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "docgen:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", r.path)
	}
}

// reference is one generated file: its path from the repository's root
// and its text.
type reference struct {
	path, text string
}

// regenerate is the command that rewrites every reference, as the files
// and the test name it.
const regenerate = "go run ./internal/docgen"

// references generates every reference file.
func references() ([]reference, error) {
	cmds, err := commandReference(runPoolc)
	if err != nil {
		return nil, err
	}
	pool, err := languageReference("pool.cue", "#File", "The pool language",
		"Every field of a pool file, as the embedded schema `schema/pool.cue` declares it. "+
			"In HCL a keyed field is a labelled block (`node \"spark-01\" { ... }`), in CUE a "+
			"struct keyed by the name (`node: \"spark-01\": { ... }`); both are checked "+
			"against this one schema and give the same messages. The guide to the language "+
			"is [../language.md](../language.md).")
	if err != nil {
		return nil, err
	}
	scen, err := languageReference("scenario.cue", "#ScenarioFile", "The scenario language",
		"Every field of a scenario file for `poolc simulate`, as the embedded schema "+
			"`schema/scenario.cue` declares it, in HCL or CUE as for pool files. "+
			"How the simulator uses a scenario is in [../simulation.md](../simulation.md); "+
			"`poolc simulate --print NAME` prints a reference scenario to start from.")
	if err != nil {
		return nil, err
	}
	return []reference{
		{"docs/reference/commands.md", cmds},
		{"docs/reference/language.md", pool},
		{"docs/reference/scenario.md", scen},
	}, nil
}
