//go:build unix

package compiler

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// memCap is the address space each hostile input is loaded under: well
// above what a real pool needs, far below what the inputs ask for.
const memCap = 4 << 30

// hostile are inputs that once exhausted memory, the stack or time. Each
// must be refused with its code and a position.
var hostile = map[string]struct {
	file, src, code string
}{
	"hcl nested for":   {"p.hcl", `pool "p" { x = [for a in [` + seq(2000) + `]: [for b in [` + seq(2000) + `]: [for c in [` + seq(2000) + `]: "` + strings.Repeat("x", 1000) + `"]]] }`, "not-literal"},
	"hcl template for": {"p.hcl", `pool "p" { x = "%{for a in [` + seq(5000) + `]}%{for b in [` + seq(5000) + `]}` + strings.Repeat("y", 1000) + `%{endfor}%{endfor}" }`, "not-literal"},
	"hcl deep":         {"p.hcl", `pool "p" { x = ` + strings.Repeat("[", 300000) + strings.Repeat("]", 300000) + " }", "too-deep"},
	"hcl huge number":  {"p.hcl", `pool "p" { x = 1e99999999 }`, "syntax"},
	"cue doubling":     {"p.cue", "pool: p: x: a40\na0: \"" + strings.Repeat("x", 1000) + "\"\n" + doubling(40), "too-large|too-slow"},
	"cue sharing":      {"p.cue", "pool: p: x: b0\n" + sharing(60), "too-large|too-slow"},
	"cue deep":         {"p.cue", "pool: p: x: " + strings.Repeat("a: ", 300000) + "1\n", "too-deep"},
	"cue huge number":  {"p.cue", "pool: p: x: 1e99999999\n", "syntax"},
	"oversized":        {"p.hcl", "# " + strings.Repeat("z", MaxPoolSize) + "\n", "too-large"},
	// Round three: what the HCL parser cannot bound itself, and CUE that
	// evaluates for hours.
	"hcl heredoc":              {"p.hcl", "pool \"p\" {\n  x = <<EOT\n" + strings.Repeat("abc\n", 25000) + "EOT\n}\n", "heredoc"},
	"hcl heredoc 15 MB":        {"p.hcl", "pool \"p\" {\n  x = <<EOT\n" + strings.Repeat("abcdefghijklmno\n", 15<<16) + "EOT\n}\n", "heredoc"},
	"hcl list 15 MB":           {"p.hcl", "pool \"p\" {\n  x = [" + strings.Repeat("1,", 15<<19) + "1]\n}\n", "too-large"},
	"hcl 5 MB number":          {"p.hcl", "pool \"p\" {\n  x = " + strings.Repeat("9", 5_000_000) + "\n}\n", "too-large"},
	"cue 5 MB number":          {"p.cue", "pool: p: x: " + strings.Repeat("9", 5_000_000) + "\n", "syntax|too-large|too-slow"},
	"hcl interpolations":       {"p.hcl", "pool \"p\" {\n  x = \"" + strings.Repeat(`${"a"}`, 2<<20) + "\"\n}\n", "too-large"},
	"hcl list under the bound": {"p.hcl", "pool \"p\" {\n  x = [" + strings.Repeat("1,", 2_240_000) + "1]\n}\n", "unknown-field"},
	"cue comprehension":        {"p.cue", "import \"list\"\n_r: list.Range(0, 2000, 1)\npool: p: x: [for i in _r for j in _r for k in _r {i}]\n", "too-slow"},
	"cue extern":               {"p.cue", "@extern(embed)\n\npackage p\n\npool: p: {}\n", "extern"},
	"fifo":                     {"fifo.hcl", "", "read"},
}

func seq(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(i)
	}
	return strings.Join(parts, ",")
}

func doubling(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "a%d: a%d + a%d\n", i, i-1, i-1)
	}
	return b.String()
}

func sharing(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "b%d: [b%d, b%d]\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "b%d: 1\n", n)
	return b.String()
}

// Every hostile input is refused cleanly, with a position, by a poolc
// whose address space is capped: never "fatal error: out of memory", a
// stack overflow or a goroutine dump. Each input runs in a child process
// (this test binary again) that sets RLIMIT_AS on itself before loading.
func TestHostileInputsUnderAMemoryCap(t *testing.T) {
	if name := os.Getenv("POOLC_HOSTILE_INPUT"); name != "" {
		loadHostile(name)
		return
	}
	for name, h := range hostile {
		t.Run(name, func(t *testing.T) {
			// A child that hangs (a FIFO read, an evaluation that never
			// ends) fails the test instead of hanging it.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHostileInputsUnderAMemoryCap$", "-test.v")
			cmd.Env = append(os.Environ(), "POOLC_HOSTILE_INPUT="+name, "POOLC_HOSTILE_DIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			text := string(out)
			if err != nil || strings.Contains(text, "fatal error") || strings.Contains(text, "goroutine ") {
				t.Fatalf("loading under a %d GiB cap: %v\n%s", memCap>>30, err, tail(text))
			}
			// code may name several: "too-large|too-slow" is whichever
			// bound the input meets first.
			i, want := -1, ""
			for _, code := range strings.Split(h.code, "|") {
				if want = "REFUSED " + code + " "; strings.Contains(text, want) {
					i = strings.Index(text, want)
					break
				}
			}
			if i < 0 {
				t.Fatalf("want a %s refusal, got:\n%s", h.code, tail(text))
			}
			at := strings.Fields(text[i+len(want):])[0]
			if !strings.HasPrefix(at, filepath.Base(h.file)) && !strings.Contains(at, "/"+h.file) {
				t.Errorf("refused at %q, want a position in %s", at, h.file)
			}
			// A refusal of the whole pool (its size, its evaluation time)
			// is at its file; every other is at its place in the file.
			wholePool := map[string]bool{"read": true, "too-large": true, "too-slow": true, "too-large|too-slow": true}
			if !wholePool[h.code] && strings.Count(at, ":") < 2 {
				t.Errorf("refused at %q, want file:line:col", at)
			}
		})
	}
}

// loadHostile is the child: it caps its own memory, loads one input and
// prints each finding as REFUSED code position message.
func loadHostile(name string) {
	h := hostile[name]
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: memCap, Max: memCap}); err != nil {
		fmt.Println("setrlimit:", err)
		os.Exit(1)
	}
	path := filepath.Join(os.Getenv("POOLC_HOSTILE_DIR"), h.file)
	if name == "fifo" {
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
	} else if err := os.WriteFile(path, []byte(h.src), 0o600); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	_, diags := Load([]string{path})
	if len(diags) == 0 {
		fmt.Println("LOADED")
		return
	}
	for _, d := range diags {
		fmt.Printf("REFUSED %s %s %s\n", d.Code, d.Pos, d.Message)
	}
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}
