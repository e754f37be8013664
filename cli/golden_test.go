package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"poolc.dev/poolc/cli/views"
)

var update = flag.Bool("update", false, "rewrite golden files")

// brokenLanguages are the languages examples/broken is written in; each
// has a folder of its own named after it.
var brokenLanguages = []string{"hcl", "cue"}

// unpairedSlugs are the mistakes whose CUE and HCL messages legitimately
// differ, so the same-message check leaves them out. Each entry says why.
// Every other slug must give the same messages in both languages once the
// file:line:col prefixes are stripped.
var unpairedSlugs = map[string]string{
	// A field set twice is caught by each language's own parser before
	// poolc's schema sees the file: HCL says "Attribute redefined", CUE
	// unifies the two values and says "conflicting values".
	"41-field-set-twice": "reported by the HCL and CUE parsers themselves",
}

// minBrokenSlugs is the least number of documented mistakes the corpus
// must keep.
const minBrokenSlugs = 25

// TestBrokenExamplesGolden runs `poolc validate` and `poolc validate
// --format json` on every documented mistake under examples/broken and
// compares the exit code and both streams with golden files under
// cli/testdata/golden/broken. Run with -update to rewrite them.
func TestBrokenExamplesGolden(t *testing.T) {
	t.Chdir("..") // the repository root, so paths read as users type them

	// findings[slug][lang] is what poolc reported for one example.
	findings := map[string]map[string]brokenFindings{}
	for _, lang := range brokenLanguages {
		paths, err := filepath.Glob(filepath.Join("examples", "broken", lang, "*."+lang))
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) == 0 {
			t.Fatalf("no examples/broken/%s/*.%s files", lang, lang)
		}
		for _, path := range paths {
			path = filepath.ToSlash(path)
			slug := strings.TrimSuffix(filepath.Base(path), "."+lang)
			if findings[slug] == nil {
				findings[slug] = map[string]brokenFindings{}
			}
			t.Run(lang+"/"+slug, func(t *testing.T) {
				findings[slug][lang] = checkBrokenExample(t, lang, slug, path)
			})
		}
	}

	slugs := make([]string, 0, len(findings))
	for slug := range findings {
		slugs = append(slugs, slug)
	}
	sort.Strings(slugs)
	if len(slugs) < minBrokenSlugs {
		t.Errorf("examples/broken documents %d mistakes, want at least %d", len(slugs), minBrokenSlugs)
	}
	for slug := range unpairedSlugs {
		if findings[slug] == nil {
			t.Errorf("unpairedSlugs lists %q, which is not under examples/broken", slug)
		}
	}

	// Same mistake, same message in both languages.
	for _, slug := range slugs {
		byLang := findings[slug]
		for _, lang := range brokenLanguages {
			if _, ok := byLang[lang]; !ok {
				t.Errorf("%s: no examples/broken/%s/%s.%s; every mistake is written in both languages", slug, lang, slug, lang)
			}
		}
		if _, ok := unpairedSlugs[slug]; ok {
			continue
		}
		hcl, okHCL := byLang["hcl"]
		cue, okCUE := byLang["cue"]
		if !okHCL || !okCUE {
			continue // reported above
		}
		if strings.Join(hcl.messages, "\n") != strings.Join(cue.messages, "\n") {
			t.Errorf("%s: HCL and CUE report the same mistake differently:\nhcl:\n  %s\ncue:\n  %s",
				slug, strings.Join(hcl.messages, "\n  "), strings.Join(cue.messages, "\n  "))
		}
		if strings.Join(hcl.codes, " ") != strings.Join(cue.codes, " ") {
			t.Errorf("%s: HCL and CUE give the same mistake different codes: hcl %v, cue %v", slug, hcl.codes, cue.codes)
		}
	}
}

// brokenFindings is what poolc reported for one broken example: the text
// output's findings without their file:line:col prefixes, and the JSON
// output's codes, in order.
type brokenFindings struct {
	messages []string
	codes    []string
}

// checkBrokenExample validates one broken example in both output formats,
// compares them with their golden files and returns its findings.
func checkBrokenExample(t *testing.T, lang, slug, path string) brokenFindings {
	golden := filepath.Join("cli", "testdata", "golden", "broken", lang, slug)

	code, stdout, stderr := runBroken("validate", path)
	compareBrokenGolden(t, golden+".txt", brokenGoldenText(code, stdout, stderr))
	if code != ExitError {
		t.Errorf("poolc validate %s: exit %d, want %d", path, code, ExitError)
	}
	if stdout != "" {
		t.Errorf("poolc validate %s wrote to stdout; findings belong on stderr:\n%s", path, stdout)
	}

	jcode, jstdout, jstderr := runBroken("validate", "--format", "json", path)
	compareBrokenGolden(t, golden+".json", brokenGoldenText(jcode, jstdout, jstderr))
	if jcode != ExitError {
		t.Errorf("poolc validate --format json %s: exit %d, want %d", path, jcode, ExitError)
	}
	if jstderr != "" {
		t.Errorf("poolc validate --format json %s wrote to stderr:\n%s", path, jstderr)
	}
	// Decoded by field name, as a script would: the JSON contract.
	var doc struct {
		Valid       bool `json:"valid"`
		Errors      int  `json:"errors"`
		Warnings    int  `json:"warnings"`
		Diagnostics []struct {
			Severity string `json:"severity"`
			Code     string `json:"code"`
			Message  string `json:"message"`
			File     string `json:"file"`
		} `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(jstdout), &doc); err != nil {
		t.Fatalf("poolc validate --format json %s: not JSON: %v\n%s", path, err, jstdout)
	}
	if doc.Valid || doc.Errors < 1 {
		t.Errorf("poolc validate --format json %s: valid=%v errors=%d, want invalid with at least one error", path, doc.Valid, doc.Errors)
	}
	if len(doc.Diagnostics) != doc.Errors+doc.Warnings {
		t.Errorf("poolc validate --format json %s: %d diagnostics, but errors+warnings = %d", path, len(doc.Diagnostics), doc.Errors+doc.Warnings)
	}

	// The text findings: every line but the closing count.
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if len(lines) < 2 {
		t.Fatalf("poolc validate %s: want at least one finding and a count on stderr, got:\n%s", path, stderr)
	}
	if want := views.CountText(doc.Errors, doc.Warnings); lines[len(lines)-1] != want {
		t.Errorf("poolc validate %s: last line %q, want the count %q", path, lines[len(lines)-1], want)
	}
	findings := lines[:len(lines)-1]
	prefix := regexp.MustCompile(`^` + regexp.QuoteMeta(path) + `(:[0-9]+:[0-9]+)?: `)
	msgs := make([]string, len(findings))
	for i, line := range findings {
		msgs[i] = prefix.ReplaceAllString(line, "")
	}

	// Text and JSON tell the same story.
	var jmsgs, codes []string
	for _, d := range doc.Diagnostics {
		codes = append(codes, d.Code)
		m := d.Message
		if d.Severity == "warning" {
			m = "warning: " + m
		}
		jmsgs = append(jmsgs, m)
		if d.Code == "" {
			t.Errorf("poolc validate --format json %s: finding %q has no code", path, d.Message)
		}
		if d.File != "" && d.File != path {
			t.Errorf("poolc validate --format json %s: finding in file %q, want %q", path, d.File, path)
		}
	}
	if strings.Join(msgs, "\n") != strings.Join(jmsgs, "\n") {
		t.Errorf("poolc validate %s: text and JSON findings differ:\ntext:\n  %s\njson:\n  %s",
			path, strings.Join(msgs, "\n  "), strings.Join(jmsgs, "\n  "))
	}
	return brokenFindings{messages: msgs, codes: codes}
}

// runBroken runs poolc in process with buffers for its streams.
func runBroken(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Main(args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

// brokenGoldenText lays out one run as golden files keep it: the exit code,
// then each stream under a header.
func brokenGoldenText(code int, stdout, stderr string) string {
	return fmt.Sprintf("exit %d\n-- stdout --\n%s-- stderr --\n%s", code, stdout, stderr)
}

// compareBrokenGolden compares got with the golden file, or rewrites the file
// under -update.
func compareBrokenGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cli -run TestBrokenExamplesGolden -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update to accept):\n--- want\n%s\n+++ got\n%s", path, want, got)
	}
}
