package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/internal/poolgen"
	"poolc.dev/poolc/internal/testing/poolctest"
)

// BenchmarkApplyGeneratedPool applies generated pools of 1,000 and 10,000
// lanes from an empty state with the real poolc binary, through the
// out-of-process sim, once with the sim keeping its world in memory and
// once in its world file, so that the cost of persisting the world shows
// as the ratio of the two (file/memory; the goal is at most 1.5). Each
// iteration starts from fresh directories; only the applies are timed.
// It reports the seconds of each apply and the steps carried out per
// second with the world file.
func BenchmarkApplyGeneratedPool(b *testing.B) {
	bin := poolctest.Binary(b)
	for _, lanes := range []int{1000, 10000} {
		opts := poolgen.Options{Nodes: max(2, lanes/10), Lanes: lanes, Members: lanes / 100, Seed: 1}
		var src bytes.Buffer
		if err := poolgen.Write(&src, poolgen.HCL, opts); err != nil {
			b.Fatal(err)
		}
		inFile := src.String()
		inMemory := strings.Replace(inFile, "builtin = true", "builtin = true\n    config = {\n      world = \":memory:\"\n    }", 1)
		if inMemory == inFile {
			b.Fatal("the generated pool has no builtin plugin to configure")
		}
		b.Run(fmt.Sprintf("lanes=%d", lanes), func(b *testing.B) {
			var memory, file time.Duration
			steps := 0
			for range b.N {
				elapsed, _ := applyOnce(b, bin, inMemory)
				memory += elapsed
				elapsed, n := applyOnce(b, bin, inFile)
				file += elapsed
				steps += n
			}
			b.ReportMetric(memory.Seconds()/float64(b.N), "s/memory-apply")
			b.ReportMetric(file.Seconds()/float64(b.N), "s/file-apply")
			b.ReportMetric(file.Seconds()/memory.Seconds(), "file/memory")
			b.ReportMetric(float64(steps)/file.Seconds(), "steps/s")
			b.ReportMetric(float64(steps/b.N), "steps/op")
		})
	}
}

// applyOnce applies the pool from a fresh directory and returns how long
// the apply took and how many steps it carried out.
func applyOnce(b *testing.B, bin, pool string) (time.Duration, int) {
	b.StopTimer()
	defer b.StartTimer()
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gen.hcl"), []byte(pool), 0o644); err != nil {
		b.Fatal(err)
	}
	r := runTimed(b, bin, []string{"apply", "--auto-approve", "--json", dir})
	return r.wall, bytes.Count(r.out, []byte(`"event":"done"`))
}
