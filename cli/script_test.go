package cli

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"poolc.dev/poolc/internal/testing/gguftest"
)

var updateScripts = flag.Bool("update-scripts", false, "rewrite the expected output in testdata/script/*.txtar")

func TestMain(m *testing.M) {
	if os.Getenv(noExecEnv) == "1" {
		os.Exit(mainWithoutProcesses())
	}
	testscript.Main(m, map[string]func(){
		"poolc": func() { os.Exit(Main(os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})) },
	})
}

// TestScripts runs the command-line scenarios in testdata/script: each is
// a txtar archive of files and the poolc commands to run on them, with
// their expected output and exit status.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *updateScripts,
		Setup: func(env *testscript.Env) error {
			// $REPO is the module's root, for scripts that check the
			// files shipped in it (examples/, README.md).
			repo, err := filepath.Abs("..")
			env.Setenv("REPO", repo)
			return err
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"tamper":   tamperCmd,
			"droplane": dropLaneCmd,
			// mkfile NAME MB PATTERN writes a file of MB mebibytes made of PATTERN repeated.
			"mkfile": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 3 {
					ts.Fatalf("usage: mkfile NAME MB PATTERN")
				}
				mb, err := strconv.Atoi(args[1])
				ts.Check(err)
				pattern := []byte(args[2] + "\n")
				data := make([]byte, 0, mb<<20+len(pattern))
				for len(data) < mb<<20 {
					data = append(data, pattern...)
				}
				ts.Check(os.WriteFile(ts.MkAbs(args[0]), data, 0o644))
			},
			// mkgguf writes the GGUF files the examples in
			// examples/memory read.
			"mkgguf": func(ts *testscript.TestScript, neg bool, args []string) {
				ts.Check(gguftest.WriteExamples(gguftest.ExampleDir))
			},
			// llamastub BINDIR MODEL builds the llama-server stand-in into
			// BINDIR and writes a model file of 1 MB it loads; the lanes
			// it runs under STATEDIR/*/ (the third argument) are killed
			// when the script ends, whatever happened.
			"llamastub": llamastubCmd,
			// freeports NAME... sets each NAME to a free loopback port
			// (with the port above it free) no other script was given.
			"freeports": freeportsCmd,
			// mkbinary NAME writes a file of bytes that are not text.
			"mkbinary": func(ts *testscript.TestScript, neg bool, args []string) {
				data := make([]byte, 4096)
				for i := range data {
					data[i] = byte(i * 7)
				}
				ts.Check(os.WriteFile(ts.MkAbs(args[0]), data, 0o755))
			},
		},
	})
}
