package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"poolc.dev/poolc/internal/testing/noexec"
	"poolc.dev/poolc/internal/testing/poolctest"
)

// noExecEnv, set to 1, makes this test binary run poolc (its arguments)
// in a process that cannot start another (internal/testing/noexec): starting one
// kills it with SIGSYS.
const noExecEnv = "POOLC_TEST_NO_PROCESS"

func mainWithoutProcesses() int {
	if err := noexec.Forbid(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return Main(os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
}

// An attacker's pool directory, as a pull request brings it: plugins
// through a symbolic link to a script outside the repository, a FIFO, a
// device, a `..` path back into the repository pinned by its own sha256,
// a pinned binary in .poolc/plugins and one found there by name; the
// built-in default serves nothing it needs. poolc validate, plugins and
// plan read it in a process where starting any process kills poolc: none
// may start one, and each names the plugins it did not start.
func TestReadingAnAttackersPoolStartsNoProcess(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	pool := filepath.Join(repo, "pool")
	plugins := filepath.Join(pool, ".poolc", "plugins")
	for _, d := range []string{filepath.Join(repo, ".git"), plugins, filepath.Join(repo, "tools"), filepath.Join(root, "outside")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	marker := filepath.Join(root, "ran")
	script := []byte(fmt.Sprintf("#!/bin/sh\necho ran >> %s\nexit 1\n", marker))
	write := func(path string) string {
		if err := os.WriteFile(path, script, 0o755); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(script)
		return hex.EncodeToString(sum[:])
	}
	sum := write(filepath.Join(root, "outside", "plug.sh"))
	write(filepath.Join(plugins, "pinned"))
	write(filepath.Join(plugins, "poolc-plugin-byname"))
	write(filepath.Join(repo, "tools", "evil"))
	for link, to := range map[string]string{"evil": filepath.Join(root, "outside", "plug.sh"), "dev": "/dev/zero"} {
		if err := os.Symlink(to, filepath.Join(plugins, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(plugins, "fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := `pool "p" {
  gateway {
    plugin = "evil"
  }
`
	for _, p := range []struct{ name, path, sha string }{
		{"evil", ".poolc/plugins/evil", ""},
		{"fifo", ".poolc/plugins/fifo", ""},
		{"dev", ".poolc/plugins/dev", ""},
		{"pinned", ".poolc/plugins/pinned", sum},
		{"dotdot", "../tools/evil", sum},
		{"byname", "", ""},
	} {
		src += fmt.Sprintf("  node %q {\n    address   = \"%s.lan\"\n    memory_gb = 64\n    runtime   = %q\n  }\n", p.name, p.name, p.name)
		src += fmt.Sprintf("  plugin %q {\n", p.name)
		if p.path != "" {
			src += fmt.Sprintf("    path = %q\n", p.path)
		}
		if p.sha != "" {
			src += fmt.Sprintf("    sha256 = %q\n", p.sha)
		}
		src += "  }\n"
	}
	src += "}\n"
	if err := os.WriteFile(filepath.Join(pool, "pool.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"validate", pool}, {"plugins", pool}, {"plan", "--lock=false", pool}} {
		// A child that blocks (on a FIFO) fails the test instead of hanging it.
		ctx, cancel := context.WithTimeout(context.Background(), poolctest.WaitLimit)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], args...)
		cmd.Env = append(os.Environ(), noExecEnv+"=1")
		out, err := cmd.CombinedOutput()
		text := string(out)
		if ctx.Err() != nil {
			t.Errorf("poolc %s did not end within %v:\n%s", strings.Join(args, " "), poolctest.WaitLimit, text)
			continue
		}
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() < 0 {
			t.Errorf("poolc %s started a process (%v):\n%s", strings.Join(args, " "), err, text)
			continue
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("poolc %s ran the attacker's script:\n%s", strings.Join(args, " "), text)
		}
		for _, name := range []string{"evil", "fifo", "dev", "pinned", "dotdot", "byname"} {
			if !strings.Contains(text, "plugin "+name+" not started") {
				t.Errorf("poolc %s does not say that plugin %s was not started:\n%s", strings.Join(args, " "), name, text)
			}
		}
	}
}
