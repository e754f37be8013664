package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedReferencesAreCurrent requires docs/reference to say what
// poolc's --help and the embedded schema say now: a changed help text, a
// new command or a new schema field without a regenerated reference fails
// here, naming the command that regenerates it.
func TestGeneratedReferencesAreCurrent(t *testing.T) {
	refs, err := references()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		have, err := os.ReadFile(filepath.Join("..", "..", r.path))
		if err != nil {
			t.Errorf("%s: %v; run %q from the repository's root", r.path, err, regenerate)
			continue
		}
		if string(have) == r.text {
			continue
		}
		hl, wl := strings.Split(string(have), "\n"), strings.Split(r.text, "\n")
		line := 0
		for line < len(hl) && line < len(wl) && hl[line] == wl[line] {
			line++
		}
		want := "(end of file)"
		if line < len(wl) {
			want = wl[line]
		}
		t.Errorf("%s:%d is out of date: it should read\n\t%s\nrun %q from the repository's root", r.path, line+1, want, regenerate)
	}
}

// TestTheCommandReferenceCoversEveryCommand requires a section for every
// command poolc lists, a multi-word one ("node token create") included,
// and for the commands it runs itself.
func TestTheCommandReferenceCoversEveryCommand(t *testing.T) {
	text, err := commandReference(runPoolc)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"plan", "apply", "node token create", "gateway config", "etcd serve", "pods run", "pods status", "state push", "plugin-serve"} {
		if !strings.Contains(text, "\n## poolc "+n+"\n\n```text\nUsage: poolc "+n+" ") {
			t.Errorf("the command reference has no section with the help of poolc %s", n)
		}
	}
}

// TestTheLanguageReferenceCoversEveryField requires a row for every field
// of every block of the pool language, nested blocks included.
func TestTheLanguageReferenceCoversEveryField(t *testing.T) {
	text, err := languageReference("pool.cue", "#File", "t", "i")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"reserve_gb", "gpu_working_set_gb", "load_headroom_gb", "image_sync", "lease_ttl", "fallbacks", "cordon", "ca", "sha256"} {
		if !strings.Contains(text, "| `"+f+"` |") {
			t.Errorf("the language reference has no row for field %s", f)
		}
	}
	for _, s := range []string{"## #Node.guard", "## #Profile.lane", "## #State.tls", "### #Name"} {
		if !strings.Contains(text, "\n"+s+"\n") {
			t.Errorf("the language reference has no section %q", s)
		}
	}
}
