package render

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnifiedDiffMatchesDiff(t *testing.T) {
	a := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n"
	b := "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nL\nm\nn\n"
	got := UnifiedDiff("before", "after", a, b)
	want := `--- before
+++ after
@@ -1,5 +1,5 @@
 a
-b
+B
 c
 d
 e
@@ -9,5 +9,6 @@
 i
 j
 k
-l
+L
 m
+n
`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if UnifiedDiff("x", "y", a, a) != "" {
		t.Fatal("equal texts must give no diff")
	}
	// The result applies with patch(1) where it is installed.
	if _, err := exec.LookPath("patch"); err == nil {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "f"), []byte(a), 0o644)
		cmd := exec.Command("patch", "-s", "f")
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(got)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("patch: %v\n%s", err, out)
		}
		if applied, _ := os.ReadFile(filepath.Join(dir, "f")); string(applied) != b {
			t.Fatalf("patched text differs:\n%s", applied)
		}
	}
}

func TestUnifiedDiffFromEmpty(t *testing.T) {
	got := UnifiedDiff("before", "after", "", "x\ny\n")
	want := "--- before\n+++ after\n@@ -0,0 +1,2 @@\n+x\n+y\n"
	if got != want {
		t.Fatalf("got %q", got)
	}
}
