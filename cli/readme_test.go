package cli

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	simplugin "poolc.dev/poolc/plugins/sim"
)

// readmeBlock is one fenced code block of the README: its info string
// ("sh", "hcl pool"), its first line's number and its text.
type readmeBlock struct {
	info string
	line int
	text string
}

// readmeBlocks returns the fenced code blocks of a Markdown document.
func readmeBlocks(doc string) []readmeBlock {
	var out []readmeBlock
	var cur *readmeBlock
	for i, l := range strings.Split(doc, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &readmeBlock{info: strings.TrimSpace(strings.TrimPrefix(l, "```")), line: i + 2}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	return out
}

// wantExit is the exit code a README command documents in a trailing
// "# exit N" comment; 0 without one.
var wantExit = regexp.MustCompile(`\s#\s*exit (\d+)\b`)

// goTest finds a command that runs go test.
var goTest = regexp.MustCompile(`(^|\s)go test\s`)

// readmeScript turns an sh block into a bash script that runs its commands
// in order and stops at the first whose exit code is not the one the
// README gives it, naming the README line. Lines that run `go test`
// (plain, under nice, with -bench) are left out: the tests are what runs
// this, and the benchmarks' figures are measured, not checked.
func readmeScript(b readmeBlock) string {
	var s strings.Builder
	lines := strings.Split(strings.TrimRight(b.text, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		n, cmd := b.line+i, lines[i]
		for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(cmd, "\\") + "\n" + lines[i]
		}
		trimmed := strings.TrimSpace(cmd)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || goTest.MatchString(trimmed) {
			continue
		}
		want := "0"
		if m := wantExit.FindStringSubmatch(cmd); m != nil {
			want = m[1]
		}
		fmt.Fprintf(&s, "echo %s >&2\n%s\nrc=$?\nif [ $rc != %s ]; then echo %s >&2; exit 99; fi\n",
			shellQuote("$ "+trimmed), cmd, want, shellQuote(fmt.Sprintf("README.md:%d: want exit %s, got ", n, want))+`"$rc"`)
	}
	return s.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestREADMERunsAsWritten runs the README's shell blocks, the quick start
// included, as a new user would: in a fresh copy of the repository in a
// temporary directory (its files, without .git or built binaries), with
// the poolc that `go install ./cmd/poolc` puts on the PATH, each command
// exiting as the README says. GOBIN and TMPDIR (the blocks' mktemp) are
// temporary too. It also validates every block marked "hcl pool" or
// "cue pool" as a pool file of its own (with the validate flags the info
// string adds after "pool").
func TestREADMERunsAsWritten(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(string(doc))
	tmp := t.TempDir()

	repo := filepath.Join(tmp, "repo")
	if err := copyRepo(root, repo); err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on the PATH: %v", err)
	}
	bin := filepath.Join(tmp, "bin")
	env := append(os.Environ(),
		"GOBIN="+bin,
		"PATH="+bin+string(os.PathListSeparator)+filepath.Dir(goBin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"TMPDIR="+tmp,
		"NO_COLOR=1",
	)
	scripts := 0
	for _, b := range blocks {
		if b.info != "sh" {
			continue
		}
		scripts++
		cmd := exec.Command("bash", "-c", readmeScript(b))
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("README.md:%d: the sh block does not run as written: %v\n%s", b.line, err, out)
		}
	}
	if scripts == 0 {
		t.Error("README.md has no sh block")
	}
	// The pool blocks, checked by the poolc the quick start installed
	// (validate starts the pool's plugins, as that binary serves them).
	poolc := filepath.Join(bin, "poolc")
	if _, err := os.Stat(poolc); err != nil {
		t.Fatalf("the quick start did not install poolc in GOBIN: %v", err)
	}
	pools := 0
	for _, b := range blocks {
		// "hcl pool --plugins=false": flags for validate, for an example
		// naming files of the reader's machine (known_hosts, keys) that
		// its plugin's Configure opens.
		lang, rest, _ := strings.Cut(b.info, " ")
		kind, flags, _ := strings.Cut(rest, " ")
		if kind != "pool" {
			continue
		}
		pools++
		dir := filepath.Join(tmp, "readme-pools", strconv.Itoa(b.line))
		file := filepath.Join(dir, "pool."+lang)
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(file, []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(poolc, append(append([]string{"validate"}, strings.Fields(flags)...), file)...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("README.md:%d: the %s block is not a valid pool (%v):\n%s", b.line, b.info, err, out)
		}
	}
	if pools == 0 {
		t.Error("README.md has no block marked as a pool (```hcl pool)")
	}
}

// copyRepo copies the repository's files from root to dir: not .git, nor
// what builds and runs leave (.ci/bin, .poolc directories).
func copyRepo(root, dir string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".poolc" || rel == filepath.Join(".ci", "bin")) {
			return filepath.SkipDir
		}
		target := filepath.Join(dir, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
}

// TestREADMEDocumentsSimOptions requires the README's table of the sim
// plugin's options to name every option the plugin reads.
func TestREADMEDocumentsSimOptions(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ty := reflect.TypeOf(simplugin.Config{})
	for i := range ty.NumField() {
		name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
		if !strings.Contains(string(doc), "| `"+name+"` |") {
			t.Errorf("README.md does not document the sim plugin's option %s in its table", name)
		}
	}
}
