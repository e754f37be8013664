package podspec

import (
	"reflect"
	"strings"
	"testing"

	"poolc.dev/poolc/pools"
)

func TestSplitCutsEveryPart(t *testing.T) {
	entries, errs := Split("pool-node-b@node-b:8#k3d-elanous-registry:5051, k3d-elanous-h1:1,plain,a@")
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	want := []Entry{
		{Context: Part{"pool-node-b", 0, true}, SSHHost: Part{"node-b", 12, true}, Capacity: Part{"8", 19, true}, Registry: Part{"k3d-elanous-registry:5051", 21, true}},
		{Context: Part{"k3d-elanous-h1", 48, true}, Capacity: Part{"1", 63, true}},
		{Context: Part{"plain", 65, true}},
		{Context: Part{"a", 71, true}, SSHHost: Part{"", 73, true}},
	}
	if !reflect.DeepEqual(entries, want) {
		t.Fatalf("got %+v\nwant %+v", entries, want)
	}
}

func TestSplitReportsTheListsShape(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int
		msg    string
	}{
		{"", 0, "member list is empty"},
		{" \t", 0, "member list is empty"},
		{"a,,b", 2, `member 2: empty entry between commas`},
		{"a, ", 3, `member 2: empty entry between commas`},
	} {
		_, errs := Split(tc.in)
		if len(errs) != 1 || errs[0].Offset != tc.offset || !strings.Contains(errs[0].Msg, tc.msg) {
			t.Errorf("Split(%q) = %+v, want one error at %d containing %q", tc.in, errs, tc.offset, tc.msg)
		}
	}
}

func TestParseRegistry(t *testing.T) {
	r, err := ParseRegistry("k3d-reg.localhost:5051")
	if err != nil || r != (pools.Registry{Name: "k3d-reg.localhost", Port: 5051}) {
		t.Fatalf("got %+v, %v", r, err)
	}
	for _, s := range []string{"k3d-r", "reg:5000", "k3d-r:0", "k3d-r:65536", "k3d-r:x"} {
		if _, err := ParseRegistry(s); err == nil {
			t.Errorf("ParseRegistry(%q) accepted it", s)
		}
	}
}

// Split loses nothing: every part sits at its offset, and the parts with
// their separators spell the entry again.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"pool-node-b@node-b:8#k3d-elanous-registry:5051,k3d-elanous-h1:1", "a:0", "a#k3d-:1", ",", "a@@b::3##k3d-x:9", " a , b@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		entries, errs := Split(s)
		for _, e := range errs {
			if e.Offset < 0 || e.Offset > len(s) {
				t.Fatalf("offset %d outside %q", e.Offset, s)
			}
		}
		for _, e := range entries {
			spelt := ""
			for _, p := range []struct {
				sep  string
				part Part
			}{{"", e.Context}, {"@", e.SSHHost}, {":", e.Capacity}, {"#", e.Registry}} {
				if !p.part.Set {
					continue
				}
				if p.part.Offset < 0 || p.part.Offset+len(p.part.Text) > len(s) || s[p.part.Offset:p.part.Offset+len(p.part.Text)] != p.part.Text {
					t.Fatalf("%q: part %+v is not at its offset", s, p.part)
				}
				spelt += p.sep + p.part.Text
			}
			if !strings.Contains(s, spelt) || spelt == "" {
				t.Fatalf("%q: entry %+v spells %q", s, e, spelt)
			}
		}
	})
}

func TestFormatIsReadBackBySplit(t *testing.T) {
	in := []pools.Member{
		{Context: "b", SSHHost: "node-b", Capacity: 8, Registry: pools.Registry{Name: "k3d-reg", Port: 5051}},
		{Context: "c", Capacity: pools.DefaultCapacity},
	}
	entries, errs := Split(Format(in))
	if len(errs) != 0 || len(entries) != 2 || entries[0].SSHHost.Text != "node-b" || entries[0].Capacity.Text != "8" || entries[0].Registry.Text != "k3d-reg:5051" || entries[1].Capacity.Set {
		t.Fatalf("Format = %q, read back as %+v %v", Format(in), entries, errs)
	}
}
