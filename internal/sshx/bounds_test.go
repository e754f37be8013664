package sshx

import (
	"bytes"
	"strings"
	"testing"
)

// The process-group line a remote command prints first is kept out of
// its stderr, wherever the login shell's startup output puts it.
func TestPgidWriterTakesTheGroupLineOut(t *testing.T) {
	for _, chunks := range [][]string{
		{"poolc-pgid 4242\nreal error\n"},
		{"poolc-p", "gid 42", "42\nreal", " error\n"},
		{"motd from .bashrc\npoolc-pgid 4242\n", "real error\n"},
	} {
		var out bytes.Buffer
		w := &pgidWriter{w: &out}
		for _, c := range chunks {
			if n, err := w.Write([]byte(c)); err != nil || n != len(c) {
				t.Fatalf("%q: %d %v", chunks, n, err)
			}
		}
		w.flush()
		want := "real error\n"
		if strings.HasPrefix(chunks[0], "motd") {
			want = "motd from .bashrc\nreal error\n"
		}
		if w.group() != 4242 || out.String() != want {
			t.Errorf("%q: group %d, stderr %q", chunks, w.group(), out.String())
		}
	}
	// Without the line (a shell that failed first) everything passes.
	var out bytes.Buffer
	w := &pgidWriter{w: &out}
	w.Write([]byte("sh: not found\n"))
	w.flush()
	if w.group() != 0 || out.String() != "sh: not found\n" {
		t.Errorf("group %d, stderr %q", w.group(), out.String())
	}
}

func TestLimitedBufferStopsAtItsBound(t *testing.T) {
	over := 0
	b := &LimitedBuffer{Max: 10, Over: func() { over++ }}
	if _, err := b.Write([]byte("12345")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write([]byte("1234567")); err == nil {
		t.Fatal("a write past the bound succeeded")
	}
	b.Write([]byte("x"))
	if over != 1 || string(b.Bytes()) != "12345" {
		t.Errorf("over %d, kept %q", over, b.Bytes())
	}
	name := CommandName([]string{"sh", "-c", "if command -v sha256sum >/dev/null 2>&1; then sha256sum < \"$1\"; else shasum -a 256 < \"$1\"; fi", "sh", "/models/m.gguf"})
	if !strings.HasPrefix(name, `sh -c "if command -v sha256sum`) || !strings.HasSuffix(name, `..." /models/m.gguf`) {
		t.Errorf("CommandName: %s", name)
	}
}
