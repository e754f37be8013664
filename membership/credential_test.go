package membership

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadCredentialRefusesAnotherPoolsAndGarbage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"pool": "lab", "node": "n1", "credential": "s"}`)
	if c, err := ReadCredential(good, "lab"); err != nil || c.Node != "n1" || c.Credential != "s" {
		t.Errorf("good credential: %+v, %v", c, err)
	}
	for _, c := range []struct{ path, want string }{
		{good + ".absent", "run poolc node join first"},
		{write("other.json", `{"pool": "prod", "node": "n1", "credential": "s"}`), "is the credential of a node of pool prod, not lab"},
		{write("empty.json", `{"pool": "lab", "node": "n1"}`), "not a node credential"},
		{write("garbage.json", `not json`), "not a node credential"},
	} {
		if _, err := ReadCredential(c.path, "lab"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", filepath.Base(c.path), err, c.want)
		}
	}
}

func TestCredentialPathDefaultsPerPool(t *testing.T) {
	if p, err := CredentialPath("/x/c.json", "lab"); err != nil || p != "/x/c.json" {
		t.Errorf("flag: %q, %v", p, err)
	}
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	t.Setenv("HOME", "/home/u")
	if p, err := CredentialPath("", "lab"); err != nil || p != filepath.Join("/cfg", "poolc", "node-lab.json") {
		t.Errorf("default: %q, %v", p, err)
	}
}
