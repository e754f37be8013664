//go:build e2e

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// poolc built in a clone of the repository, as `go install ./cmd/poolc`
// builds it for a user, says which commit it is: a module version (not
// "devel") and the clone's HEAD, unmodified.
func TestE2EVersionOfAGitCheckout(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is not on the PATH: apt-get install git, or bash .ci/install.d/cli.sh")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "poolc")
	run := func(dir string, env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run(root, nil, git, "clone", "-q", "--no-local", root, clone)
	head := run(clone, nil, git, "rev-parse", "HEAD")
	bin := filepath.Join(t.TempDir(), "poolc")
	// A machine's GOFLAGS may turn stamping off (-buildvcs=false); a
	// user's go install stamps by default.
	run(clone, []string{"GOFLAGS=-buildvcs=true"}, "go", "build", "-o", bin, "./cmd/poolc")
	got := run(clone, nil, bin, "version")
	want := regexp.MustCompile(`^poolc v\S+ \(git ` + head + `, \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)$`)
	if !want.MatchString(got) {
		t.Errorf("poolc version = %q, want a module version and revision %s, unmodified", got, head)
	}
}
