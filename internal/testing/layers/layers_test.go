package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "poolc.dev/poolc/"

// layers ranks packages by their path, bottom up: the first pattern that
// matches a package gives its layer.
var layers = []struct {
	pattern string
	layer   int
}{
	{`^internal/testing(/|$)`, 90}, // test doubles may use anything
	{`^internal/poolgen$`, 30},     // generates pools, with the compiler's rules
	{`^internal/docgen$`, 100},     // writes docs/reference from the commands and the schema
	{`^internal/`, 0},              // production helpers
	{`^pools$`, 10},                // the shared vocabulary
	{`^schema$`, 20},
	{`^journal(/|$)`, 20}, // records, replay and their backends
	{`^compiler/(tree|suggest|numlit|memest|podspec|place|planjson)$`, 30},
	{`^runner/(schedule|store)$`, 30},
	{`^compiler/`, 40},
	{`^runner/store/`, 40},
	{`^runner$`, 40},
	{`^compiler$`, 50},
	{`^plugins/(host|builtin)$`, 70},
	{`^plugins/`, 60}, // protocol, SDK, convert, actuators
	{`^(controller|membership)$`, 60},
	{`^sim$`, 70},
	{`^sim/`, 75},
	{`^orchestrate$`, 80},
	{`^cli/arguments$`, 95}, // each command's parsed arguments, defaults from the packages
	{`^cli/views$`, 95},     // how the commands show what they do: writers to an io.Writer
	{`^(cli|cmd/.*|examples/.*|tools/.*)$`, 100},
}

// actuator names the actuator a package belongs to, if any.
var actuator = regexp.MustCompile(`^plugins/(llama|haproxy|kube|imagesync|simactuator)(/|$)`)

// privileged are the packages an actuator must not import: what it needs
// of the configuration and the state comes in its requests.
var privileged = regexp.MustCompile(`^(compiler|runner/store)(/|$)`)

func layerOf(t *testing.T, pkg string) int {
	for _, l := range layers {
		if regexp.MustCompile(l.pattern).MatchString(pkg) {
			return l.layer
		}
	}
	t.Errorf("package %s has no layer: add it to layers", pkg)
	return -1
}

// TestNoImportArrowRunsBackUp reads the imports of every non-test Go file
// of the module and fails on an arrow from a package to one of a higher
// layer, from an actuator to another, or from an actuator to the
// compiler or the state store.
func TestNoImportArrowRunsBackUp(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.HasPrefix(string(b), "module poolc.dev/poolc\n") {
		t.Fatalf("%s is not the module's root: %v", root, err)
	}
	arrows := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // another module (examples/plugins/webhook, tools/kube)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		from := filepath.ToSlash(rel)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			to, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			arrows++
			a, b := actuator.FindStringSubmatch(from), actuator.FindStringSubmatch(to)
			switch {
			case layerOf(t, to) > layerOf(t, from):
				t.Errorf("%s: %s imports %s, a package of a higher layer", path, from, to)
			case a != nil && b != nil && a[1] != b[1]:
				t.Errorf("%s: actuator %s imports actuator %s", path, from, to)
			case a != nil && privileged.MatchString(to):
				t.Errorf("%s: actuator %s imports %s: a plugin gets the configuration and the state from its requests", path, from, to)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if arrows < 100 {
		t.Fatalf("read %d import arrows: the walk missed the module", arrows)
	}
}
