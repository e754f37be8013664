package poolgen

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"cuelang.org/go/cue/cuecontext"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/compiler/place"
)

// Generated pools of every size validate without findings in both
// languages, and load to exactly the IR the generator built.
func TestGeneratedPoolsValidate(t *testing.T) {
	sizes := []Options{
		{Nodes: 2, Lanes: 3, Members: 1, Seed: 3},
		{Nodes: 5, Lanes: 12, Members: 3, Seed: 1},
		{Nodes: 12, Lanes: 200, Members: 0, Seed: 2},
		{Nodes: 200, Lanes: 2000, Members: 40, Seed: 1},
	}
	for _, opts := range sizes {
		want, err := Generate(opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, lang := range []Language{HCL, CUE} {
			t.Run(fmt.Sprintf("%s/%d-nodes-%d-lanes", lang, opts.Nodes, opts.Lanes), func(t *testing.T) {
				var buf bytes.Buffer
				if err := Write(&buf, lang, opts); err != nil {
					t.Fatal(err)
				}
				cfg, diags := compiler.CompileWith([]compiler.File{{Name: "gen." + string(lang), Src: buf.Bytes()}}, compiler.Options{})
				if len(diags) > 0 {
					t.Fatalf("%d findings, first:\n%v", len(diags), diags[:min(len(diags), 10)])
				}
				if !reflect.DeepEqual(cfg.Pool, want) {
					t.Errorf("loaded pool differs from the generated one:\nloaded:    %+v\ngenerated: %+v", cfg.Pool, want)
				}
			})
		}
	}
}

func TestGeneratedPoolShape(t *testing.T) {
	p, err := Generate(Options{Nodes: 200, Lanes: 2000, Members: 40, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Nodes) != 200 || len(p.Lanes) != 2000 || len(p.PodPools[0].Members) != 40 {
		t.Fatalf("got %d nodes, %d lanes, %d members", len(p.Nodes), len(p.Lanes), len(p.PodPools[0].Members))
	}
	residencies := map[string]int{}
	for _, l := range p.Lanes {
		residencies[string(l.Residency)]++
		if n := len(l.Placement); n < 2 || n > 3 {
			t.Errorf("lane %s has %d candidates, want 2 or 3", l.Name, n)
		}
	}
	if len(residencies) != 3 {
		t.Errorf("residencies = %v, want all three", residencies)
	}
	if len(p.Profiles) != 2 || p.ActiveProfile != activeProfile || len(p.Profile(maintenanceProfile).Cordon) == 0 {
		t.Errorf("profiles = %+v, active %q", p.Profiles, p.ActiveProfile)
	}
}

// The placer puts every lane on its first candidate that the profile does
// not cordon, under every profile, as the generator planned.
func TestLanesPlaceOnTheirFirstCandidate(t *testing.T) {
	p, err := Generate(Options{Nodes: 40, Lanes: 1500, Members: 4, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range p.Profiles {
		view := p.Under(pr.Name)
		first := map[string]string{}
		for _, l := range view.Lanes {
			for _, n := range l.Placement {
				if !view.Cordoned[n] {
					first[l.Name] = n
					break
				}
			}
		}
		res := place.Place(place.Input{Pool: p, Profile: pr.Name})
		if len(res.Unplaced) > 0 || len(res.Desired.Lanes) != len(p.Lanes) {
			t.Fatalf("profile %s: %d of %d lanes placed; unplaced: %+v", pr.Name, len(res.Desired.Lanes), len(p.Lanes), res.Unplaced)
		}
		for _, l := range res.Desired.Lanes {
			if l.Node != first[l.Name] {
				t.Errorf("profile %s: lane %s is on %s, want its first candidate %s", pr.Name, l.Name, l.Node, first[l.Name])
			}
		}
	}
}

func TestSameSeedSameBytes(t *testing.T) {
	gen := func(seed int64, lang Language) string {
		var buf bytes.Buffer
		if err := Write(&buf, lang, Options{Nodes: 30, Lanes: 120, Members: 6, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	for _, lang := range []Language{HCL, CUE} {
		if gen(5, lang) != gen(5, lang) {
			t.Errorf("%s: seed 5 gave two different pools", lang)
		}
		if gen(5, lang) == gen(6, lang) {
			t.Errorf("%s: seeds 5 and 6 gave the same pool", lang)
		}
	}
}

func TestBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Nodes: 1, Lanes: 1}, "want at least 2"},
		{Options{Nodes: 2, Lanes: -1}, "lanes is -1"},
		{Options{Nodes: 2, Members: -1}, "members is -1"},
		{Options{Nodes: 2, Members: 7000}, "at most 3000 per node"},
		{Options{Name: "Big Pool", Nodes: 2}, `pool name "Big Pool"`},
	} {
		if _, err := Generate(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Generate(%+v) = %v, want an error saying %q", tc.opts, err, tc.want)
		}
	}
	if err := Write(&bytes.Buffer{}, "yaml", Options{Nodes: 2}); err == nil || !strings.Contains(err.Error(), "unknown language") {
		t.Errorf("Write in yaml = %v", err)
	}
}

// Quoted strings read back as written in both languages, template
// openers and escapes included.
func TestQuoteReadsBack(t *testing.T) {
	for _, s := range []string{`a"b\c`, "${x} %{y} $z %", "tab\tnl\n\x01", "\\(x)", "é"} {
		hv, diags := hclsyntax.ParseExpression([]byte(quote(s, HCL)), "q.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("HCL %s: %v", quote(s, HCL), diags)
		}
		if got, diags := hv.Value(nil); diags.HasErrors() || got.AsString() != s {
			t.Errorf("HCL %s reads back as %q, want %q", quote(s, HCL), got.AsString(), s)
		}
		cv := cuecontext.New().CompileString(quote(s, CUE))
		if got, err := cv.String(); err != nil || got != s {
			t.Errorf("CUE %s reads back as %q (%v), want %q", quote(s, CUE), got, err, s)
		}
	}
	for k, want := range map[string]string{"class": "class", "rack_2": "rack_2", "a-b": `"a-b"`, "2x": `"2x"`, "": `""`, "if": `"if"`} {
		if got := key(k, CUE); got != want {
			t.Errorf("key(%q) = %s, want %s", k, got, want)
		}
	}
}

// A pool written in parts loads, all its files together, to the IR the
// generator built, in both languages; each part holds a share of it.
func TestPartsLoadAsOnePool(t *testing.T) {
	opts := Options{Nodes: 20, Lanes: 300, Members: 4, Seed: 4}
	want, err := Generate(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, lang := range []Language{HCL, CUE} {
		t.Run(string(lang), func(t *testing.T) {
			bufs := make([]bytes.Buffer, 3)
			ws := []io.Writer{&bufs[0], &bufs[1], &bufs[2]}
			if err := WriteParts(ws, lang, opts); err != nil {
				t.Fatal(err)
			}
			var files []compiler.File
			for i := range bufs {
				if !strings.Contains(bufs[i].String(), "lane") {
					t.Errorf("part %d holds no lane:\n%s", i+1, bufs[i].String())
				}
				files = append(files, compiler.File{Name: fmt.Sprintf("gen-%d.%s", i+1, lang), Src: bufs[i].Bytes()})
			}
			cfg, diags := compiler.CompileWith(files, compiler.Options{})
			if len(diags) > 0 {
				t.Fatalf("%d findings, first:\n%v", len(diags), diags[:min(len(diags), 10)])
			}
			if !reflect.DeepEqual(cfg.Pool, want) {
				t.Errorf("the parts load to another pool than the generated one")
			}
		})
	}
}
