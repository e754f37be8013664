package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/pools"
)

// A run of many quick steps writes one snapshot at its end, not one per
// step: the journal holds every step, with its effect, in between.
func TestSnapshotsAreBoundedAndTheJournalHoldsEveryEffect(t *testing.T) {
	rec := &memRecorder{}
	res := Run(context.Background(), routes(500, nil), emptyState(), &fake{}, rec, Options{Parallelism: 10, SnapshotInterval: time.Hour})
	if !res.OK() {
		t.Fatalf("result: %+v", res.WriteErr)
	}
	if rec.writes != 1 || rec.finished != 500 || len(rec.last.Routes) != 500 {
		t.Fatalf("%d snapshots, the last holding %d of 500 finished steps and %d routes", rec.writes, rec.finished, len(rec.last.Routes))
	}
	if rec.effects != 500 {
		t.Fatalf("the journal holds %d effects, want 500", rec.effects)
	}
}

// Cancelling a run writes a snapshot at once, while a step is still in
// flight, whatever the interval.
func TestACancelWritesASnapshotAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	snapped := make(chan struct{})
	rec := &memRecorder{written: func(st *pools.State) {
		if len(st.Routes) == 1 {
			close(snapped)
		}
	}}
	f := &fake{behave: func(id string, _ int, sctx context.Context) Response {
		if id == "route:a0" {
			return Response{}
		}
		cancel()
		<-sctx.Done()
		select {
		case <-snapped:
			return Response{Diagnostics: pools.StepFailure("cancelled")}
		case <-time.After(10 * time.Second):
			return Response{Diagnostics: pools.StepFailure("no snapshot while this step was in flight")}
		}
	}}
	res := Run(ctx, routes(2, map[int][]int{1: {0}}), emptyState(), f, rec, Options{SnapshotInterval: time.Hour})
	if got := res.Steps[1].Diagnostics[0].Message; got != "cancelled" {
		t.Fatalf("step 1: %s", got)
	}
}

// A journal that cannot be written stops the run and fails it.
func TestAJournalWriteErrorStopsTheRun(t *testing.T) {
	rec := &memRecorder{failAt: 5}
	res := Run(context.Background(), routes(50, nil), emptyState(), &fake{}, rec, Options{Parallelism: 1})
	if res.OK() || res.WriteErr == nil || !strings.Contains(res.WriteErr.Error(), "disk full") {
		t.Fatalf("result OK %v, error %v", res.OK(), res.WriteErr)
	}
	if done := res.Count(Done); done > 5 {
		t.Fatalf("%d steps done after the journal failed at its 5th record", done)
	}
}
