package podspec

import (
	"reflect"
	"strings"
	"testing"

	"poolc.dev/poolc/pools"
)

func TestParseReadsEveryPart(t *testing.T) {
	entries, errs := Parse("pool-node-b@node-b:8#k3d-elanous-registry:5051, pool-node-c@node-c:2#k3d-elanous-registry:5052,k3d-elanous-h1:1,plain")
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if offs := []int{entries[0].Offset, entries[1].Offset, entries[2].Offset}; !reflect.DeepEqual(offs, []int{0, 48, 95}) {
		t.Errorf("offsets = %v", offs)
	}
	got := Members(entries)
	want := []pools.Member{
		{Context: "pool-node-b", SSHHost: "node-b", Capacity: 8, Registry: pools.Registry{Name: "k3d-elanous-registry", Port: 5051}},
		{Context: "pool-node-c", SSHHost: "node-c", Capacity: 2, Registry: pools.Registry{Name: "k3d-elanous-registry", Port: 5052}},
		{Context: "k3d-elanous-h1", Capacity: 1},
		{Context: "plain", Capacity: 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestParseReportsEveryProblemWithItsOffset(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int
		msg    string
	}{
		{"", 0, "member list is empty"},
		{"a,,b", 2, `member 2 "": empty entry between commas`},
		{"a:0", 2, `capacity "0" must be an integer >= 1`},
		{"a:x", 2, `capacity "x" must be an integer >= 1`},
		{"a:2.5", 2, `capacity "2.5" must be an integer >= 1`},
		{"a#registry:5000", 2, `registry name "registry" must start with "k3d-"`},
		{"a#k3d-r:0", 2, `registry port "0" must be an integer from 1 to 65535`},
		{"a#k3d-r:65536", 2, `registry port "65536"`},
		{"a#k3d-r", 2, `registry "k3d-r" must be k3d-NAME:PORT`},
		{"x, a@h;rm -rf", 5, `ssh host "h;rm -rf"`},
		{"$(id)", 0, `context "$(id)" must be`},
	} {
		_, errs := Parse(tc.in)
		if len(errs) != 1 || errs[0].Offset != tc.offset || !strings.Contains(errs[0].Msg, tc.msg) {
			t.Errorf("Parse(%q) = %+v, want one error at %d containing %q", tc.in, errs, tc.offset, tc.msg)
		}
	}
}

func TestFormatIsTheInverseOfParse(t *testing.T) {
	in := "b@node-b:8#k3d-reg:5051,c:1,d@h#k3d-r:1"
	m, errs := Parse(in)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if got := Format(Members(m)); got != in {
		t.Fatalf("Format = %q, want %q", got, in)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"pool-node-b@node-b:8#k3d-elanous-registry:5051,k3d-elanous-h1:1", "a:0", "a#k3d-:1", ",", "a@@b::3##k3d-x:9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		members, errs := Parse(s)
		for _, e := range errs {
			if e.Offset < 0 || e.Offset > len(s) {
				t.Fatalf("offset %d outside %q", e.Offset, s)
			}
		}
		if len(errs) == 0 {
			again, errs2 := Parse(Format(Members(members)))
			if len(errs2) != 0 || !reflect.DeepEqual(Members(again), Members(members)) {
				t.Fatalf("round trip of %q: %+v / %v", s, again, errs2)
			}
		}
	})
}
