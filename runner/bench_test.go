package runner

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store"
)

// BenchmarkRun carries out 10,000 independent steps that return at once,
// ten in flight, recording them nowhere and then in a state file with its
// journal: the runner's own cost per step, without a plugin's transport
// (cmd/poolc's BenchmarkApplyThroughPlugin adds that).
func BenchmarkRun(b *testing.B) {
	const steps = 10000
	plan := routes(steps, nil)
	for _, tc := range []struct {
		name string
		rec  func(*testing.B) Recorder
	}{
		{"memory", func(*testing.B) Recorder { return &memRecorder{} }},
		{"file", func(b *testing.B) Recorder {
			j, err := store.Open(filepath.Join(b.TempDir(), "poolc.state.json")).BeginJournal("bench")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { j.End("") })
			return NewStoreRecorder(j, &pools.State{})
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var elapsed time.Duration
			for range b.N {
				rec := tc.rec(b)
				begin := time.Now()
				res := Run(context.Background(), plan, emptyState(), &fake{}, rec, Options{Parallelism: 10})
				elapsed += time.Since(begin)
				if !res.OK() {
					b.Fatalf("%d of %d steps done: %v", res.Count(Done), steps, res.WriteErr)
				}
			}
			b.ReportMetric(float64(b.N*steps)/elapsed.Seconds(), "steps/s")
		})
	}
}
