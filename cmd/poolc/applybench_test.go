package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/internal/poolgen"
)

// BenchmarkApplyGeneratedPool applies generated pools of 1,000 and 10,000
// lanes from an empty state with the real poolc binary, through the
// out-of-process sim, once with the sim keeping its world in a file and
// once in memory, so that the cost of persisting the world shows as the
// ratio of the two. Each iteration starts from a fresh directory; only the
// apply is timed. It reports the steps carried out per second.
func BenchmarkApplyGeneratedPool(b *testing.B) {
	bin := poolcBinary(b)
	for _, lanes := range []int{1000, 10000} {
		opts := poolgen.Options{Nodes: max(2, lanes/10), Lanes: lanes, Members: lanes / 100, Seed: 1}
		var src bytes.Buffer
		if err := poolgen.Write(&src, poolgen.HCL, opts); err != nil {
			b.Fatal(err)
		}
		for _, world := range []string{"memory", "file"} {
			pool := src.String()
			if world == "memory" {
				pool = strings.Replace(pool, "builtin = true", "builtin = true\n    config = {\n      world = \":memory:\"\n    }", 1)
				if pool == src.String() {
					b.Fatal("the generated pool has no builtin plugin to configure")
				}
			}
			b.Run(fmt.Sprintf("lanes=%d/world=%s", lanes, world), func(b *testing.B) {
				var elapsed time.Duration
				steps := 0
				for range b.N {
					b.StopTimer()
					dir := b.TempDir()
					if err := os.WriteFile(filepath.Join(dir, "gen.hcl"), []byte(pool), 0o644); err != nil {
						b.Fatal(err)
					}
					var out, errOut bytes.Buffer
					cmd := exec.Command(bin, "apply", "--auto-approve", "--json", dir)
					cmd.Stdout, cmd.Stderr = &out, &errOut
					b.StartTimer()
					begin := time.Now()
					err := cmd.Run()
					elapsed += time.Since(begin)
					if err != nil {
						b.Fatalf("apply: %v\n%s", err, errOut.String())
					}
					steps += bytes.Count(out.Bytes(), []byte(`"event":"done"`))
				}
				b.ReportMetric(float64(steps)/elapsed.Seconds(), "steps/s")
				b.ReportMetric(float64(steps/b.N), "steps/op")
			})
		}
	}
}
