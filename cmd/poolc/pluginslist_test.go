package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"poolc.dev/poolc/internal/testing/poolctest"
)

// poolc plugins reads a checkout without running its code: a declared
// plugin whose unpinned binary lies inside the repository (the pool's
// .poolc/plugins, or a $POOLC_PLUGIN_PATH directory inside the
// repository) is listed with its sha256 and a warning, and not executed;
// --allow-unpinned runs it, and so is a binary outside the repository.
func TestPluginsDoesNotRunUnpinnedBinariesOfTheRepository(t *testing.T) {
	bin := poolctest.Binary(t)
	marker := filepath.Join(t.TempDir(), "ran")
	script := fmt.Sprintf("#!/bin/sh\necho ran >> %s\nexit 1\n", marker)
	pool := `pool "p" {
  node "a" {
    address   = "a.lan"
    memory_gb = 64
    runtime   = "evil"
  }
  plugin "evil" {}
}
`
	setup := func(t *testing.T, binDir string) (repo, poolDir string) {
		repo = t.TempDir()
		if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		poolDir = filepath.Join(repo, "pools")
		if binDir == "" {
			binDir = filepath.Join(poolDir, ".poolc", "plugins")
		}
		for _, dir := range []string{poolDir, binDir} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(poolDir, "pool.hcl"), []byte(pool), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(binDir, "poolc-plugin-evil"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return repo, poolDir
	}
	plugins := func(t *testing.T, pluginPath string, args ...string) (string, bool) {
		os.Remove(marker)
		cmd := exec.Command(bin, append([]string{"plugins"}, args...)...)
		cmd.Env = append(os.Environ(), "POOLC_PLUGIN_PATH="+pluginPath)
		out, _ := cmd.CombinedOutput()
		_, err := os.Stat(marker)
		return string(out), err == nil
	}
	notStarted := regexp.MustCompile(`(?m)^evil +unpinned in the repository, not started .*poolc-plugin-evil +[0-9a-f]{64}$`)

	// In the pool's .poolc/plugins.
	_, poolDir := setup(t, "")
	out, ran := plugins(t, "", poolDir)
	if ran || !notStarted.MatchString(out) || !strings.Contains(out, "warning: plugin evil not started") || !strings.Contains(out, "--allow-unpinned") {
		t.Errorf("plugins ran=%v the unpinned binary in .poolc/plugins:\n%s", ran, out)
	}
	if out, ran := plugins(t, "", "--allow-unpinned", poolDir); !ran {
		t.Errorf("plugins --allow-unpinned did not run it:\n%s", out)
	}

	// On a plugin path inside the repository.
	repo, poolDir := setup(t, "")
	os.Remove(filepath.Join(poolDir, ".poolc", "plugins", "poolc-plugin-evil"))
	inRepo := filepath.Join(repo, "tools", "bin")
	os.MkdirAll(inRepo, 0o755)
	os.WriteFile(filepath.Join(inRepo, "poolc-plugin-evil"), []byte(script), 0o755)
	if out, ran := plugins(t, inRepo, poolDir); ran || !notStarted.MatchString(out) {
		t.Errorf("plugins ran=%v the unpinned binary on a plugin path inside the repository:\n%s", ran, out)
	}

	// On a plugin path outside the repository: installed by the operator.
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "poolc-plugin-evil"), []byte(script), 0o755)
	os.Remove(filepath.Join(inRepo, "poolc-plugin-evil"))
	if out, ran := plugins(t, outside, poolDir); !ran {
		t.Errorf("plugins did not start the plugin installed outside the repository:\n%s", out)
	}
}
