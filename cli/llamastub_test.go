package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"

	"poolc.dev/poolc/internal/testing/llamastub"
)

// llamastubCmd is the script command llamastub BINDIR MODEL STATEDIR.
func llamastubCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: llamastub BINDIR MODEL STATEDIR")
	}
	bin := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(bin, 0o755))
	_, err := llamastub.Build(bin)
	ts.Check(err)
	model := ts.MkAbs(args[1])
	ts.Check(os.MkdirAll(filepath.Dir(model), 0o755))
	ts.Check(llamastub.WriteModel(model, 1_000_000))
	state := ts.MkAbs(args[2])
	ts.Defer(func() {
		pidfiles, _ := filepath.Glob(filepath.Join(state, "*", "*.pid"))
		for _, f := range pidfiles {
			b, _ := os.ReadFile(f)
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}
