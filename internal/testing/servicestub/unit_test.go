package servicestub

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/fuzzcheck"
)

func TestSplitExecFollowsSystemdQuoting(t *testing.T) {
	for _, c := range []struct {
		in   string
		want [][]string
	}{
		{`/bin/a b  c`, [][]string{{"/bin/a", "b", "c"}}},
		{`"/bin/a b" "c d" 'e f'`, [][]string{{"/bin/a b", "c d", "e f"}}},
		{`/bin/a "x\"y" "\\" "\n\t" "\x41"`, [][]string{{"/bin/a", `x"y`, `\`, "\n\t", "A"}}},
		{`/bin/a ; /bin/b`, [][]string{{"/bin/a"}, {"/bin/b"}}},
		{`/bin/a \; x;y`, [][]string{{"/bin/a", ";", "x;y"}}},
		{`/bin/a "" b`, [][]string{{"/bin/a", "", "b"}}},
	} {
		got, err := SplitExec(c.in)
		if err != nil || !slices.EqualFunc(got, c.want, slices.Equal[[]string]) {
			t.Errorf("SplitExec(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`/bin/a "open`, `/bin/a \q`, `/bin/a \`} {
		if got, err := SplitExec(bad); err == nil {
			t.Errorf("SplitExec(%q) = %q; want an error", bad, got)
		}
	}
}

func TestSubstituteFollowsSystemd(t *testing.T) {
	env := []string{"A=one two", "B=x"}
	got := Substitute([]string{"/bin/$A", "$A", "${B}y", "$$A", "a$B", "$C", "${"}, env)
	want := []string{"/bin/$A", "one", "two", "xy", "$A", "a$B", "${"}
	if !slices.Equal(got, want) {
		t.Errorf("Substitute = %q; want %q", got, want)
	}
}

func TestParseUnit(t *testing.T) {
	u, err := ParseUnit(`# comment
[Unit]
Description=lane %n

[Service]
Type=exec
ExecStart="/opt/x" "%h/m" \
  "100%%"
Environment="A=1 2" B=3
StandardOutput=append:%h/log
StandardError=null
KillSignal=SIGUSR1
KillMode=mixed
TimeoutStopSec=1min 500ms
SendSIGKILL=no
`, Specifiers{Home: "/home/u", Unit: "x.service"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(u.Exec, []string{"/opt/x", "/home/u/m", "100%"}) || !slices.Equal(u.Env, []string{"A=1 2", "B=3"}) ||
		u.Stdout != (Output{Path: "/home/u/log", Mode: "append"}) || u.Stderr != (Output{}) || u.KillSignal != syscall.SIGUSR1 ||
		u.KillMode != "mixed" || u.TimeoutStop != time.Minute+500*time.Millisecond || u.SendSIGKILL {
		t.Errorf("%+v", u)
	}
	for name, text := range map[string]string{
		"no ExecStart":      "[Service]\nType=exec\n",
		"relative":          "[Service]\nExecStart=x\n",
		"two commands":      "[Service]\nExecStart=/a ; /b\n",
		"restart":           "[Service]\nExecStart=/a\nRestart=always\n",
		"unknown setting":   "[Service]\nExecStart=/a\nUser=root\n",
		"unknown specifier": "[Service]\nExecStart=/a %Z\n",
		"not key=value":     "[Service]\nExecStart\n",
	} {
		if _, err := ParseUnit(text, Specifiers{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzParseUnit: any text parses or is refused, without a hang, and an
// accepted unit has an absolute executable.
func FuzzParseUnit(f *testing.F) {
	f.Add("[Service]\nExecStart=\"/a b\" \\;\nEnvironment=A=1\nTimeoutStopSec=3s\n")
	f.Add("[Service]\nExecStart=/a \\\n b\nStandardOutput=append:/l\n")
	f.Fuzz(func(t *testing.T, text string) {
		fuzzcheck.Within("ParseUnit", []byte(text), func() {
			u, err := ParseUnit(text, Specifiers{Home: "/h"})
			if err == nil && (len(u.Exec) == 0 || !strings.HasPrefix(u.Exec[0], "/")) {
				t.Fatalf("accepted %q with ExecStart %q", text, u.Exec)
			}
		})
	})
}

// FuzzSplitExec: any value splits or is refused; what splits, quoted
// back word by word, splits the same.
func FuzzSplitExec(f *testing.F) {
	f.Add(`/bin/a "b c" 'd' \; e;f "\x41\n"`)
	f.Fuzz(func(t *testing.T, s string) {
		cmds, err := SplitExec(s)
		if err != nil {
			return
		}
		var parts []string
		for _, cmd := range cmds {
			var words []string
			for _, w := range cmd {
				words = append(words, quoteForTest(w))
			}
			parts = append(parts, strings.Join(words, " "))
		}
		again, err := SplitExec(strings.Join(parts, " ; "))
		if err != nil || !slices.EqualFunc(again, cmds, slices.Equal[[]string]) {
			t.Fatalf("%q splits as %q; quoted back, as %q (%v)", s, cmds, again, err)
		}
	})
}

// quoteForTest quotes a word with octal escapes for every byte that is
// not a letter or digit (NUL as it is, which no escape gives): a quoting
// independent of the llama package's.
func quoteForTest(w string) string {
	if w == ";" {
		return `\;`
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteString(`\` + string([]byte{'0' + c>>6, '0' + c>>3&7, '0' + c&7}))
	}
	b.WriteByte('"')
	return b.String()
}
