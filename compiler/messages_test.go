package compiler

import (
	"strings"
	"testing"
)

// A value of megabytes gives messages of a line: a 3-million-character
// alias name once gave an 18 MB error message, a 5 MB number was printed
// whole. Each finding quotes the start of the value and says how much
// more there is.
func TestHugeValuesGiveShortMessages(t *testing.T) {
	long := strings.Repeat("a", 3_000_000)
	digits := strings.Repeat("9", 5_000_000)
	for name, src := range map[string]string{
		"alias":  "pool \"p\" {\n  alias \"" + long + "\" {\n    lane = \"x\"\n  }\n}\n",
		"string": "pool \"p\" {\n  active_profile = \"" + long + "\"\n}\n",
		"number": "pool \"p\" {\n  node \"a\" {\n    address = \"a.lan\"\n    memory_gb = " + digits + "\n  }\n}\n",
		"cue":    "pool: p: alias: \"" + long + "\": lane: \"x\"\n",
	} {
		file := "p.hcl"
		if name == "cue" {
			file = "p.cue"
		}
		_, diags := Compile([]File{{Name: file, Src: []byte(src)}})
		if !diags.HasErrors() {
			t.Errorf("%s: accepted", name)
			continue
		}
		for _, d := range diags {
			if len(d.Message) > 1000 {
				t.Errorf("%s: a message of %d bytes: %.200s...", name, len(d.Message), d.Message)
			}
			if d.Pos.Line == 0 {
				t.Errorf("%s: %s has no position", name, d.Message)
			}
		}
	}
}
