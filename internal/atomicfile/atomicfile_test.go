package atomicfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestWriteReplacesKeepsTheModeAndLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.hcl")
	if err := os.WriteFile(path, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o640)
	if err := Write(path, []byte("new"), 0o666); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if string(got) != "new" || st.Mode().Perm() != 0o640 {
		t.Fatalf("content %q mode %v", got, st.Mode())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries, want only the file", len(ents))
	}
}

// A new file gets the mode asked for less the umask, never a mode forced
// over it.
func TestANewFileRespectsTheUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "state.json")
	if err := Write(path, []byte("{}"), 0o666); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v under umask 077, want 0600", st.Mode().Perm())
	}
}

func TestCleanRemovesOnlyTheTemporaryFilesOfItsPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	for _, name := range []string{".s.json.tmp-1234", ".s.json.tmp-abcd", ".other.json.tmp-1", "s.json"} {
		os.WriteFile(filepath.Join(dir, name), nil, 0o600)
	}
	if err := Clean(path); err != nil {
		t.Fatal(err)
	}
	var left []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if len(left) != 2 || left[0] != ".other.json.tmp-1" || left[1] != "s.json" {
		t.Fatalf("left %v", left)
	}
}

func TestWriteIntoMissingDirectoryFails(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "no", "f"), nil, 0o600); err == nil {
		t.Fatal("want an error")
	}
}
