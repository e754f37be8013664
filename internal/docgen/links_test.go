package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink finds the target of a Markdown link: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// codeSpan finds inline code, whose brackets are not links.
var codeSpan = regexp.MustCompile("`[^`]*`")

// TestDocsLinksResolve requires every relative link of the README and of
// docs/ (the generated references included) to name a file of the
// repository and, with a #fragment, a heading of that file, so the
// README's map reaches every page and section it names in one hop.
func TestDocsLinksResolve(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, pattern := range []string{"docs/*.md", "docs/reference/*.md"} {
		found, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			rel, _ := filepath.Rel(root, f)
			files = append(files, rel)
		}
	}
	anchors := map[string]map[string]bool{}
	headingsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		doc, err := os.ReadFile(path)
		if err == nil {
			inFence := false
			for _, l := range strings.Split(string(doc), "\n") {
				if strings.HasPrefix(l, "```") {
					inFence = !inFence
				}
				if !inFence && strings.HasPrefix(l, "#") {
					a[anchor(strings.TrimSpace(strings.TrimLeft(l, "# ")))] = true
				}
			}
		}
		anchors[path] = a
		return a
	}
	for _, f := range files {
		doc, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		inFence := false
		for i, line := range strings.Split(string(doc), "\n") {
			if strings.HasPrefix(line, "```") {
				inFence = !inFence
			}
			if inFence {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, "``"), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, frag, _ := strings.Cut(target, "#")
				full := filepath.Join(root, f)
				if path != "" {
					full = filepath.Join(filepath.Dir(full), path)
				}
				if _, err := os.Stat(full); err != nil {
					t.Errorf("%s:%d: the link %s names no file", f, i+1, target)
					continue
				}
				if frag != "" && !headingsOf(full)[frag] {
					t.Errorf("%s:%d: the link %s names no heading of %s", f, i+1, target, path)
				}
			}
		}
	}
}
