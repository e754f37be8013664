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

	simplugin "poolc.dev/poolc/plugins/simactuator"
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

// readmeScript turns an sh block of the document file into a bash script
// that runs its commands in order and stops at the first whose exit code
// is not the one the document gives it, naming the document's line.
// Lines that run `go test` (plain, under nice, with -bench) are left out:
// the tests are what runs this, and the benchmarks' figures are measured,
// not checked.
func readmeScript(file string, b readmeBlock) string {
	var s strings.Builder
	for _, c := range blockCommands(b) {
		if goTest.MatchString(c.text) {
			continue
		}
		want := "0"
		if m := wantExit.FindStringSubmatch(c.text); m != nil {
			want = m[1]
		}
		fmt.Fprintf(&s, "echo %s >&2\n%s\nrc=$?\nif [ $rc != %s ]; then echo %s >&2; exit 99; fi\n",
			shellQuote("$ "+strings.TrimSpace(c.text)), c.text, want, shellQuote(fmt.Sprintf("%s:%d: want exit %s, got ", file, c.line, want))+`"$rc"`)
	}
	return s.String()
}

// blockCommand is one command of an sh block: its text (continuation
// lines joined) and the document line it starts on.
type blockCommand struct {
	line int
	text string
}

// blockCommands splits an sh block into its commands, without blank
// lines and comments.
func blockCommands(b readmeBlock) []blockCommand {
	var out []blockCommand
	lines := strings.Split(strings.TrimRight(b.text, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		n, cmd := b.line+i, lines[i]
		for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(cmd, "\\") + "\n" + lines[i]
		}
		if trimmed := strings.TrimSpace(cmd); trimmed != "" && !strings.HasPrefix(trimmed, "#") {
			out = append(out, blockCommand{n, cmd})
		}
	}
	return out
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// docFiles are the documents whose examples the tests run: the README
// and the guides in docs/ (not docs/reference, which is generated from
// the commands and the schema and checked by internal/docgen).
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, f := range files {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rel)
	}
	return out
}

// TestDocsRunAsWritten runs the shell blocks of the README and of every
// guide in docs/, the quick start included, as a new user would: in a
// fresh copy of the repository in a temporary directory (its files,
// without .git or built binaries), with the poolc that `go install
// ./cmd/poolc` puts on the PATH, each command exiting as the document
// says. GOBIN and TMPDIR (the blocks' mktemp) are temporary too. Blocks
// marked "sh fleet" need the reader's own machines: they must parse
// (bash -n), and each poolc command in them must name a real command and
// only flags its --help lists. It also validates every block marked
// "hcl pool" or "cue pool" as a pool file of its own (with the validate
// flags the info string adds after "pool").
func TestDocsRunAsWritten(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
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
	type docBlock struct {
		file string
		readmeBlock
	}
	var blocks []docBlock
	for _, f := range docFiles(t, root) {
		doc, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range readmeBlocks(string(doc)) {
			blocks = append(blocks, docBlock{f, b})
		}
	}
	// The README's blocks first: its quick start installs the poolc the
	// other documents' blocks run.
	readmeScripts := 0
	for _, b := range blocks {
		if b.info != "sh" {
			continue
		}
		if b.file == "README.md" {
			readmeScripts++
		}
		cmd := exec.Command("bash", "-c", readmeScript(b.file, b.readmeBlock))
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s:%d: the sh block does not run as written: %v\n%s", b.file, b.line, err, out)
		}
	}
	if readmeScripts == 0 {
		t.Error("README.md has no sh block")
	}
	poolc := filepath.Join(bin, "poolc")
	if _, err := os.Stat(poolc); err != nil {
		t.Fatalf("the README's quick start did not install poolc in GOBIN: %v", err)
	}
	for _, b := range blocks {
		if b.info != "sh fleet" {
			continue
		}
		if out, err := exec.Command("bash", "-n", "-c", b.text).CombinedOutput(); err != nil {
			t.Errorf("%s:%d: the sh fleet block is not valid shell: %v\n%s", b.file, b.line, err, out)
		}
		for _, c := range blockCommands(b.readmeBlock) {
			if msg := checkPoolcCommand(poolc, env, c.text); msg != "" {
				t.Errorf("%s:%d: %s", b.file, c.line, msg)
			}
		}
	}
	// The pool blocks, checked by the poolc the quick start installed
	// (validate starts the pool's plugins, as that binary serves them).
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
		dir := filepath.Join(tmp, "doc-pools", strings.ReplaceAll(b.file, "/", "_"), strconv.Itoa(b.line))
		file := filepath.Join(dir, "pool."+lang)
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(file, []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(poolc, append(append([]string{"validate"}, strings.Fields(flags)...), file)...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s:%d: the %s block is not a valid pool (%v):\n%s", b.file, b.line, b.info, err, out)
		}
	}
	if pools == 0 {
		t.Error("the docs have no block marked as a pool (```hcl pool)")
	}
}

// checkPoolcCommand checks a poolc command line of a block that is not
// run: its command (the longest run of up to three leading words that
// poolc's help takes for a command) must exist, and each --flag it passes
// before a lone -- must be one that command's --help lists. It returns
// what is wrong, or "" for a line that does not run poolc.
func checkPoolcCommand(poolc string, env []string, line string) string {
	words := strings.Fields(line)
	if len(words) == 0 || words[0] != "poolc" {
		return ""
	}
	var names []string
	for _, w := range words[1:] {
		if strings.HasPrefix(w, "-") || len(names) == 3 {
			break
		}
		names = append(names, w)
	}
	for n := len(names); n >= 1; n-- {
		name := strings.Join(names[:n], " ")
		cmd := exec.Command(poolc, append(append([]string{}, names[:n]...), "--help")...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil || !strings.HasPrefix(string(out), "Usage: poolc "+name+" [flags]") {
			continue
		}
		for _, w := range words[1+n:] {
			if w == "--" || strings.HasPrefix(w, "#") {
				break
			}
			flag, _, _ := strings.Cut(w, "=")
			if !strings.HasPrefix(flag, "--") {
				continue
			}
			// pflag lists a flag as "  --name type", "-n, --name type"
			// or "  --name[=true|false]".
			if !regexp.MustCompile(`(?m)^\s+(-\w, )?` + regexp.QuoteMeta(flag) + `[\s\[]`).Match(out) {
				return fmt.Sprintf("poolc %s has no flag %s (poolc %s --help)", name, flag, name)
			}
		}
		return ""
	}
	return fmt.Sprintf("%q names no poolc command", line)
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

// TestDocsDocumentSimOptions requires the table of the sim plugin's
// options in docs/actuators.md to name every option the plugin reads.
func TestDocsDocumentSimOptions(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "actuators.md"))
	if err != nil {
		t.Fatal(err)
	}
	ty := reflect.TypeOf(simplugin.Config{})
	for i := range ty.NumField() {
		name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
		if !strings.Contains(string(doc), "| `"+name+"` |") {
			t.Errorf("docs/actuators.md does not document the sim plugin's option %s in its table", name)
		}
	}
}
