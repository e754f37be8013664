package compiler_test

import (
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/compiler/render"
	"poolc.dev/poolc/internal/poolgen"
	"poolc.dev/poolc/internal/testing/scalepool"
	"poolc.dev/poolc/pools"
)

// BenchmarkScale measures, for generated HCL pools of each size in
// scalepool.Sizes, in one run:
//   - parse: hclsyntax.ParseConfig of each of the pool's files whole, the
//     floor any HCL pool tool that parses a file whole pays (poolc parses
//     a large file in pieces, in parallel, and joins them: hclfront);
//   - validate: compiler.Compile (parse, schema, decode, validate);
//   - plan-empty: Compile, then the plan from an empty state, rendered as
//     `poolc plan` renders it;
//   - plan-nochange: the same against the state that plan leads to (no
//     refresh: the plugins' part is measured through the binary by
//     cmd/poolc's benchmarks).
//
// Each reports its seconds per operation ("s/op" of the sub-benchmark),
// its CPU seconds ("cpu-s/op") and, but parse, its ratio to parse in wall
// and in CPU time ("x-parse", "x-parse-cpu"). Pools are compiled in
// memory, from files of scalepool.LanesPerFile lanes, as poolgen --files
// writes them.
func BenchmarkScale(b *testing.B) {
	scale(b, poolgen.HCL, "parse", func(b *testing.B, files []compiler.File) {
		for _, f := range files {
			if _, diags := hclsyntax.ParseConfig(f.Src, f.Name, hcl.InitialPos); diags.HasErrors() {
				b.Fatal(diags)
			}
		}
	}, true)
}

// scale runs the scale sub-benchmarks for the generated pools in lang of
// each size in scalepool.Sizes: floor (named floorName: what reading the
// files costs any tool), then validate and plan-empty and, with nochange,
// plan-nochange, each reporting its ratio to the floor.
func scale(b *testing.B, lang poolgen.Language, floorName string, floor func(*testing.B, []compiler.File), nochange bool) {
	for _, lanes := range scalepool.Sizes() {
		files := generate(b, lang, lanes)
		var base cost
		b.Run(fmt.Sprintf("lanes=%d/%s", lanes, floorName), func(b *testing.B) {
			m := startMeter()
			for b.Loop() {
				floor(b, files)
			}
			base = m.report(b, cost{})
		})
		b.Run(fmt.Sprintf("lanes=%d/validate", lanes), func(b *testing.B) {
			b.ReportAllocs()
			m := startMeter()
			for b.Loop() {
				compile(b, files)
			}
			m.report(b, base)
		})
		empty := &pools.State{FormatVersion: pools.StateFormatVersion}
		var after pools.Fleet
		b.Run(fmt.Sprintf("lanes=%d/plan-empty", lanes), func(b *testing.B) {
			b.ReportAllocs()
			m := startMeter()
			for b.Loop() {
				after = planOnce(b, compile(b, files), empty).After
			}
			m.report(b, base)
		})
		if !nochange {
			continue
		}
		current := &pools.State{FormatVersion: pools.StateFormatVersion, Fleet: after}
		b.Run(fmt.Sprintf("lanes=%d/plan-nochange", lanes), func(b *testing.B) {
			b.ReportAllocs()
			m := startMeter()
			for b.Loop() {
				if p := planOnce(b, compile(b, files), current); len(p.Steps) > 0 {
					b.Fatalf("%d steps after the plan's own fleet; want none", len(p.Steps))
				}
			}
			m.report(b, base)
		})
	}
}

// cost is the wall and CPU time of one operation.
type cost struct{ wall, cpu time.Duration }

// meter measures a benchmark's wall time and the CPU time of the whole
// process (user and system, the garbage collector's included): on a
// loaded machine the CPU time is the steadier of the two.
type meter struct {
	begin time.Time
	cpu   time.Duration
}

func startMeter() meter { return meter{begin: time.Now(), cpu: processCPU()} }

// report reports the CPU seconds per operation ("cpu-s/op") and, against
// parse when it is known, the ratios of wall and CPU time ("x-parse",
// "x-parse-cpu"); it returns the cost of one operation.
func (m meter) report(b *testing.B, parse cost) cost {
	n := time.Duration(b.N)
	c := cost{wall: time.Since(m.begin) / n, cpu: (processCPU() - m.cpu) / n}
	b.ReportMetric(c.cpu.Seconds(), "cpu-s/op")
	if parse.wall > 0 && parse.cpu > 0 {
		b.ReportMetric(float64(c.wall)/float64(parse.wall), "x-parse")
		b.ReportMetric(float64(c.cpu)/float64(parse.cpu), "x-parse-cpu")
	}
	return c
}

// processCPU is the CPU time the process has used so far.
func processCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// generate writes the scale benchmarks' pool of n lanes in the language,
// as files of scalepool.LanesPerFile lanes at most.
func generate(b *testing.B, lang poolgen.Language, n int) []compiler.File {
	srcs, err := scalepool.Files(lang, n)
	if err != nil {
		b.Fatal(err)
	}
	files := make([]compiler.File, len(srcs))
	for i, src := range srcs {
		files[i] = compiler.File{Name: fmt.Sprintf("gen-%d.%s", i+1, lang), Src: src}
	}
	return files
}

// compile is compiler.Compile of files, failing on any finding.
func compile(b *testing.B, files []compiler.File) *compiler.Config {
	cfg, diags := compiler.Compile(files)
	if diags.HasErrors() || cfg == nil || cfg.Pool == nil {
		b.Fatalf("compile: %v", diags.Err())
	}
	return cfg
}

// planOnce plans cfg against current and renders the plan's text as
// `poolc plan` does.
func planOnce(b *testing.B, cfg *compiler.Config, current *pools.State) *pools.Plan {
	p, err := compiler.Plan(cfg, current, compiler.PlanOptions{})
	if err != nil {
		b.Fatal(err)
	}
	render.Text(io.Discard, p, render.TextOptions{})
	return p
}
