package compiler_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/compiler/place"
	"poolc.dev/poolc/internal/poolgen"
	"poolc.dev/poolc/pools"
)

// benchPool is the size the design's goals are set for: HCL under 0.5 s,
// CUE under 2 s, under 300 MB peak, on two cores.
var benchPool = poolgen.Options{Nodes: 1000, Lanes: 10000, Members: 100, Seed: 1}

func BenchmarkLoadValidateHCL(b *testing.B) { benchLoad(b, poolgen.HCL) }

func BenchmarkLoadValidateCUE(b *testing.B) { benchLoad(b, poolgen.CUE) }

// benchLoad times compiler.Load (read, parse, schema check, decode,
// validate) of a generated pool written once, outside the timer.
func benchLoad(b *testing.B, lang poolgen.Language) {
	path := filepath.Join(b.TempDir(), "gen."+string(lang))
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := poolgen.Write(f, lang, benchPool); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		cfg, diags := compiler.Load([]string{path})
		if len(diags) > 0 || cfg == nil {
			b.Fatalf("%d findings: %v", len(diags), diags.Err())
		}
	}
}

// BenchmarkPlanHCL times `poolc plan` of the benchmark pool where about one
// lane in ten moves, load included: the state is the pool before the
// change, placed. The lanes that move are on-demand ones whose placement
// turns around (an on-demand lane holds no room another lane counts on),
// unless the turn leaves them no room.
func BenchmarkPlanHCL(b *testing.B) {
	p, err := poolgen.Generate(benchPool)
	if err != nil {
		b.Fatal(err)
	}
	current := &pools.State{FormatVersion: pools.StateFormatVersion, Pool: p.Name}
	current.Fleet = place.Place(place.Input{Pool: p}).Desired
	turned := map[string][]string{} // lane -> its placement before the turn
	for i := range p.Lanes {
		if l := &p.Lanes[i]; i%5 == 0 && l.Residency == pools.OnDemand && len(l.Placement) > 1 {
			turned[l.Name] = l.Placement
			l.Placement = append(append([]string(nil), l.Placement[1:]...), l.Placement[0])
		}
	}
	var src bytes.Buffer
	for range 5 { // turn back the lanes that no longer fit
		src.Reset()
		if err := poolgen.Render(&src, poolgen.HCL, p, "the benchmark pool with one lane in ten moved"); err != nil {
			b.Fatal(err)
		}
		_, diags := compiler.Compile([]compiler.File{{Name: "moved.hcl", Src: src.Bytes()}})
		reverted := 0
		for _, d := range diags {
			if len(d.Path) >= 2 && d.Path[0] == "lane" && turned[d.Path[1]] != nil {
				p.Lane(d.Path[1]).Placement = turned[d.Path[1]]
				delete(turned, d.Path[1])
				reverted++
			}
		}
		if reverted == 0 {
			break
		}
	}
	path := filepath.Join(b.TempDir(), "moved.hcl")
	if err := os.WriteFile(path, src.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var moves int
	for b.Loop() {
		cfg, diags := compiler.Load([]string{path})
		if diags.HasErrors() {
			b.Fatal(diags.Err())
		}
		plan, err := compiler.Plan(cfg, current, compiler.PlanOptions{})
		if err != nil {
			b.Fatal(err)
		}
		moves = 0
		for _, s := range plan.Steps {
			if s.Kind == pools.StepStop {
				moves++
			}
		}
	}
	b.ReportMetric(float64(moves), "lanes-moved")
}
