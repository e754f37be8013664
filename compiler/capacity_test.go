package compiler

import (
	"strings"
	"testing"
)

// A capacity past what an integer holds exactly is refused where it is
// written, in the compact member list and the long form alike: it was
// accepted and planned as capacity=-9223372036854775808.
func TestCapacityOverflowIsRefused(t *testing.T) {
	for name, c := range map[string]struct{ src, at string }{
		"compact": {"pool \"p\" {\n  pod_pool \"h\" {\n    image   = \"x\"\n    members = \"node-b:99999999999999999999#k3d-reg:5051\"\n  }\n}\n", "p.hcl:4:23"},
		"block":   {"pool \"p\" {\n  pod_pool \"h\" {\n    image = \"x\"\n    member \"node-b\" {\n      capacity = 99999999999999999999\n    }\n  }\n}\n", "p.hcl:5:18"},
		"cue":     {"pool: p: pod_pool: h: {\n\timage:   \"x\"\n\tmembers: \"node-b:99999999999999999999\"\n}\n", "p.cue:3:19"},
	} {
		file := "p.hcl"
		if name == "cue" {
			file = "p.cue"
		}
		_, diags := Compile([]File{{Name: file, Src: []byte(c.src)}})
		if len(diags) != 1 || diags[0].Code != "out-of-range" || diags[0].Pos.String() != c.at || !strings.Contains(diags[0].Message, "no larger than 9007199254740992") {
			t.Errorf("%s: got %v, want one out-of-range error at %s", name, diags, c.at)
		}
	}
}
