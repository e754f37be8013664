package compiler

import (
	"fmt"
	"strings"
	"testing"
)

// An entry declared in two files of one pool is reported at the second,
// naming where the first is, however many entries the files hold.
func TestEntryDeclaredInTwoFiles(t *testing.T) {
	var a, b strings.Builder
	a.WriteString("pool \"p\" {\n")
	b.WriteString("pool \"p\" {\n")
	for i := range 50 {
		fmt.Fprintf(&a, "  node \"a-%d\" {\n    address   = \"a%d.lan\"\n    memory_gb = 64\n  }\n", i, i)
		fmt.Fprintf(&b, "  node \"b-%d\" {\n    address   = \"b%d.lan\"\n    memory_gb = 64\n  }\n", i, i)
	}
	b.WriteString("  node \"a-7\" {\n    address   = \"again.lan\"\n    memory_gb = 64\n  }\n")
	a.WriteString("}\n")
	b.WriteString("}\n")
	_, diags := Compile([]File{{Name: "a.hcl", Src: []byte(a.String())}, {Name: "b.hcl", Src: []byte(b.String())}})
	var dups []string
	for _, d := range diags {
		if d.Code == "duplicate" {
			dups = append(dups, d.Pos.String()+": "+d.Message)
		}
	}
	want := `b.hcl:202:8: node "a-7" is declared twice; first at a.hcl:30:8`
	if len(dups) != 1 || dups[0] != want {
		t.Errorf("duplicates: %q\nwant one: %q", dups, want)
	}
}
