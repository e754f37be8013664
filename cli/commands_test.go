package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestCommandTable checks that every command of the table is reached by
// its name, once, and shows its help.
func TestCommandTable(t *testing.T) {
	if len(commands) != len(table) {
		t.Fatalf("%d commands by name for %d in the table: a name is there twice", len(commands), len(table))
	}
	for _, c := range table {
		var out, errOut bytes.Buffer
		args := append(strings.Fields(c.name), "--help")
		if code := Main(args, Stdio{Out: &out, Err: &errOut}); code != ExitOK {
			t.Errorf("poolc %s --help: exit %d, stderr %q", c.name, code, errOut.String())
		}
		if want := "Usage: poolc " + c.name + " [flags] " + c.args; !strings.HasPrefix(out.String(), want) {
			t.Errorf("poolc %s --help starts %q, want %q", c.name, strings.SplitN(out.String(), "\n", 2)[0], want)
		}
	}
}
