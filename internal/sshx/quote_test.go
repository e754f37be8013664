package sshx

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// shells returns the POSIX shells installed here; /bin/sh always is.
func shells(t testing.TB) []string {
	out := []string{"/bin/sh"}
	for _, s := range []string{"bash", "dash", "zsh", "ksh"} {
		if p, err := exec.LookPath(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// echoArgv runs `printf '%s\0' ARGV...` through shell -c the way sshd hands
// a command to a login shell, and returns the words the program received.
func echoArgv(t interface{ Fatalf(string, ...any) }, shell string, argv []string) []string {
	cmd, err := Command(append([]string{"printf", `%s\0`}, argv...))
	if err != nil {
		t.Fatalf("%v", err)
	}
	out, err := exec.Command(shell, "-c", cmd).Output()
	if err != nil {
		t.Fatalf("%s -c %q: %v", shell, cmd, err)
	}
	if len(argv) == 0 {
		return nil
	}
	words := strings.Split(string(out), "\x00")
	return words[:len(words)-1]
}

var nasty = []string{
	"", " ", "  two  spaces ", "'", "''", `"`, `\`, `\'`, `'\''`, "$HOME", "${HOME}", "$(id)", "`id`",
	"a;b", "a&&b", "a|b", "a>b", "<a", "*", "?", "[a-z]", "~", "~root", "a=b", "-n", "--", "#c", "!",
	"\n", "a\nb", "\t", "\r\n", "{a,b}", "é", "\xff\xfe", "%s", "$'x'", "a b 'c' \"d\" $e",
}

func TestQuoteNasty(t *testing.T) {
	for _, sh := range shells(t) {
		got := echoArgv(t, sh, nasty)
		if len(got) != len(nasty) {
			t.Fatalf("%s: got %d words %q, want %d", sh, len(got), got, len(nasty))
		}
		for i := range nasty {
			if got[i] != nasty[i] {
				t.Errorf("%s: word %d = %q, want %q", sh, i, got[i], nasty[i])
			}
		}
	}
}

func TestQuoteForms(t *testing.T) {
	for in, want := range map[string]string{
		"":               "''",
		"plain-1.2_x":    "plain-1.2_x",
		"/models/a.gguf": "/models/a.gguf",
		"a b":            "'a b'",
		"it's":           `'it'\''s'`,
		"a=b":            "'a=b'",
		"~":              "'~'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestCommandRefuses(t *testing.T) {
	if _, err := Command(nil); err == nil {
		t.Error("empty argv accepted")
	}
	if _, err := Command([]string{"echo", "a\x00b"}); !errors.Is(err, ErrNUL) {
		t.Errorf("NUL: err = %v, want ErrNUL", err)
	}
}

// TestQuoteProperty: for any argv without NUL bytes, every POSIX shell here
// passes exactly argv to the program.
func TestQuoteProperty(t *testing.T) {
	sh := shells(t)
	word := rapid.OneOf(
		rapid.String(),
		rapid.StringOf(rapid.SampledFrom([]rune("'\"\\$`;&|<>(){}[]*?~#!= \t\nab"))),
		rapid.SampledFrom(nasty),
	)
	rapid.Check(t, func(rt *rapid.T) {
		argv := rapid.SliceOfN(word, 1, 6).Draw(rt, "argv")
		for i, a := range argv {
			argv[i] = strings.ReplaceAll(a, "\x00", "")
		}
		shell := rapid.SampledFrom(sh).Draw(rt, "shell")
		got := echoArgv(rt, shell, argv)
		if len(got) != len(argv) {
			rt.Fatalf("%s: got %q, want %q", shell, got, argv)
		}
		for i := range argv {
			if got[i] != argv[i] {
				rt.Fatalf("%s: word %d = %q, want %q", shell, i, got[i], argv[i])
			}
		}
	})
}

// FuzzQuote checks that /bin/sh reads Quote(s) back as exactly s, for any s
// without a NUL byte.
func FuzzQuote(f *testing.F) {
	for _, s := range nasty {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			if _, err := Command([]string{s}); !errors.Is(err, ErrNUL) {
				t.Fatalf("NUL accepted: %v", err)
			}
			return
		}
		got := echoArgv(t, "/bin/sh", []string{s})
		if len(got) != 1 || !bytes.Equal([]byte(got[0]), []byte(s)) {
			t.Fatalf("sh read %q back as %q", s, got)
		}
	})
}
