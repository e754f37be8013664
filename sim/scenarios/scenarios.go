// Package scenarios holds the reference scenarios that ship with poolc,
// written for the examples/spark-lab pool: pair-crash, lease-loss,
// mac-joins, pair-taken, demand-flap, rolling-upgrade and disk-full.
// `poolc simulate --scenario NAME` runs one by name.
package scenarios

import (
	"embed"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed *.hcl *.cue
var files embed.FS

// Names lists the reference scenarios.
func Names() []string {
	ents, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), path.Ext(e.Name())))
	}
	sort.Strings(out)
	return out
}

// Lookup returns the file name and source of a reference scenario.
func Lookup(name string) (string, []byte, bool) {
	for _, ext := range []string{".hcl", ".cue"} {
		if src, err := files.ReadFile(name + ext); err == nil {
			return name + ext, src, true
		}
	}
	return "", nil, false
}
