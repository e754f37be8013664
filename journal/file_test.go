package journal

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"poolc.dev/poolc/pools"
)

// BenchmarkFileJournal journals steps as an apply does, ten at a time:
// each step's started record, then its finished record with its effect,
// each waited for, and reports records per second.
func BenchmarkFileJournal(b *testing.B) {
	j, err := Start(filepath.Join(b.TempDir(), "j"), "bench", "", 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	steps := make([]pools.Step, 1000)
	for i := range steps {
		alias := fmt.Sprintf("alias-%05d", i)
		steps[i] = pools.Step{ID: "route:" + alias, Kind: pools.StepRoute, Target: alias, DependsOn: []string{},
			Route: &pools.Route{Alias: alias, Lane: pools.Cloud}}
	}
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for g := range 10 {
			wg.Go(func() {
				for i := g; i < len(steps); i += 10 {
					s := &steps[i]
					if err := j.Queue(Record{Event: StepStarted, Step: s.ID, Message: "sim"})(); err != nil {
						b.Error(err)
					}
					if err := j.Queue(Record{Event: StepFinished, Step: s.ID, Effect: s})(); err != nil {
						b.Error(err)
					}
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(2*len(steps)*b.N)/b.Elapsed().Seconds(), "records/s")
}
