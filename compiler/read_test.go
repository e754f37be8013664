package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/pools"
)

// loadSoon loads paths, failing the test instead of hanging if loading
// blocks (on a FIFO without a writer, old poolc waited forever).
func loadSoon(t *testing.T, paths ...string) pools.Diagnostics {
	t.Helper()
	done := make(chan pools.Diagnostics, 1)
	go func() {
		_, diags := Load(paths)
		done <- diags
	}()
	select {
	case d := <-done:
		return d
	case <-time.After(20 * time.Second):
		t.Fatalf("Load(%v) blocked", paths)
		return nil
	}
}

// A pool file that is not a regular file is refused before it is read:
// a FIFO would block, /dev/zero would never end, and a directory or a
// socket is not a file at all.
func TestNonRegularFilesAreRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.hcl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.hcl")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		fifo: "not a regular file (a FIFO)",
		zero: "not a regular file (a character device)",
	} {
		diags := loadSoon(t, name)
		if len(diags) != 1 || diags[0].Pos.File != name || !strings.Contains(diags[0].Message, want) {
			t.Errorf("%s: got %v, want one error %q naming the file", name, diags, want)
		}
	}
	// In a directory of pool files, the FIFO is refused as well.
	sub := filepath.Join(dir, "pool")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(sub, "a.hcl"), 0o600); err != nil {
		t.Fatal(err)
	}
	if diags := loadSoon(t, sub); len(diags) != 1 || !strings.Contains(diags[0].Message, "a FIFO") {
		t.Errorf("directory with a FIFO: got %v", diags)
	}
}

// The size limit holds for the pool, all files together, not per file.
func TestPoolSizeLimitSpansFiles(t *testing.T) {
	dir := t.TempDir()
	chunk := "# " + strings.Repeat("x", MaxPoolSize/4) + "\n"
	for _, n := range []string{"a.hcl", "b.hcl", "c.hcl", "d.hcl"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(chunk), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	diags := loadSoon(t, dir)
	if len(diags) != 1 || diags[0].Code != "too-large" || !strings.HasSuffix(diags[0].Pos.File, "d.hcl") {
		t.Fatalf("got %v, want one too-large error at the file that passes the limit", diags)
	}
	if diags := loadSoon(t, filepath.Join(dir, "a.hcl"), filepath.Join(dir, "b.hcl")); diags.HasErrors() && diags[0].Code == "too-large" {
		t.Fatalf("two thirds of the limit was refused: %v", diags)
	}
}

// POOLC_MAX_POOL_MIB raises the pool's size limit for one run, within its
// ceiling; a value outside it is refused, naming the variable.
func TestPoolSizeLimitRaisedByEnv(t *testing.T) {
	dir := t.TempDir()
	chunk := "# " + strings.Repeat("x", MaxPoolSize/4) + "\n"
	for _, n := range []string{"a.hcl", "b.hcl", "c.hcl", "d.hcl", "e.hcl"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(chunk), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(MaxPoolSizeEnv, "21")
	for _, d := range loadSoon(t, dir) {
		if d.Code == "too-large" {
			t.Fatalf("%s=21 still refuses a pool of 20 MiB: %v", MaxPoolSizeEnv, d)
		}
	}
	t.Setenv(MaxPoolSizeEnv, "20")
	if diags := loadSoon(t, dir); len(diags) != 1 || diags[0].Code != "too-large" || !strings.Contains(diags[0].Message, "20 MiB") {
		t.Fatalf("%s=20: got %v, want the pool of 20 MiB and more refused", MaxPoolSizeEnv, diags)
	}
	for _, bad := range []string{"15", "257", "lots", "16.5"} {
		t.Setenv(MaxPoolSizeEnv, bad)
		if diags := loadSoon(t, dir); len(diags) != 1 || !strings.Contains(diags[0].Message, MaxPoolSizeEnv) {
			t.Errorf("%s=%s: got %v, want one error naming the variable", MaxPoolSizeEnv, bad, diags)
		}
	}
}
