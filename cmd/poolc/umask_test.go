package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"poolc.dev/poolc/internal/testing/poolctest"
)

// An apply under umask 077 leaves every file it and the sim plugin write
// (state, journal, sim world and its journal) readable by the owner only,
// and every directory it makes closed to others: poolc never forces 0644.
func TestAnApplyUnderUmask077WritesNothingOthersCanRead(t *testing.T) {
	bin := poolctest.Binary(t)
	dir := poolctest.SparkLab(t, t.TempDir(), 0.0001)
	os.Chmod(filepath.Join(dir, "spark-lab.hcl"), 0o600)
	out, err := exec.Command("sh", "-c", `umask 077 && exec "$0" apply --auto-approve "$1"`, bin, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	files := 0
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s: mode %v under umask 077", path[len(dir)+1:], perm)
		}
		files++
		return nil
	})
	for _, want := range []string{"poolc.state.json", "poolc.state.json.journal", ".poolc/sim-world.json"} {
		if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
			t.Errorf("the apply left no %s", want)
		}
	}
	t.Logf("%d files and directories checked", files)
}
