package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"poolc.dev/poolc/compiler"
)

func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--help"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	for _, want := range []string{"Usage: poolgen", "--nodes", "--lanes", "--members", "--lang", "--seed", "--out", "Exit codes"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}

// The file written follows --out's extension and validates.
func TestWritesAValidFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"pool.hcl", "pool.cue"} {
		path := filepath.Join(dir, name)
		var out, errOut bytes.Buffer
		if code := run([]string{"--nodes", "20", "--lanes", "80", "--members", "5", "--seed", "4", "--out", path}, &out, &errOut); code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", name, code, errOut.String())
		}
		if out.Len() > 0 {
			t.Errorf("%s: wrote to stdout too: %q", name, out.String())
		}
		if _, diags := compiler.Load([]string{path}); len(diags) > 0 {
			t.Errorf("%s: %v", name, diags.Err())
		}
	}
}

// --files writes the pool as that many files in the directory --out,
// which poolc loads as one pool.
func TestWritesParts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pool")
	var out, errOut bytes.Buffer
	if code := run([]string{"--nodes", "20", "--lanes", "80", "--members", "5", "--files", "3", "--out", dir}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 3 || ents[0].Name() != "gen-1.hcl" {
		t.Fatalf("wrote %v (%v); want gen-1.hcl to gen-3.hcl", ents, err)
	}
	cfg, diags := compiler.Load([]string{dir})
	if len(diags) > 0 {
		t.Fatalf("%v", diags.Err())
	}
	if n := len(cfg.Pool.Lanes); n != 80 {
		t.Errorf("the parts load %d lanes; want 80", n)
	}
}

func TestStdout(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--lang", "cue", "--nodes", "3", "--lanes", "4"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	if !strings.Contains(out.String(), "package pool") {
		t.Errorf("stdout is not CUE:\n%s", out.String())
	}
}

func TestBadUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--lang", "yaml"}, `unknown --lang "yaml"`},
		{[]string{"--lang", "cue", "--out", filepath.Join(dir, "x.hcl")}, "poolc would read it as hcl"},
		{[]string{"--out", filepath.Join(dir, "x.json")}, "want a .hcl or .cue file"},
		{[]string{"--nodes", "1"}, "want at least 2"},
		{[]string{"--nodes", "many"}, "invalid argument"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--files", "3"}, "want --out DIR"},
		{[]string{"--files", "0", "--out", filepath.Join(dir, "d")}, "want 1 or more"},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 1 and %q", tc.args, code, errOut.String(), tc.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("bad usage wrote %d files", len(ents))
	}
}
