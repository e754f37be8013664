package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"poolc.dev/poolc/pools"
)

// Records appended from many goroutines at once all reach the journal as
// whole lines, each before its Append returns, and records queued in an
// order are written in that order.
func TestConcurrentAppendsAreWrittenWholeAndInQueueOrder(t *testing.T) {
	f := Open(filepath.Join(t.TempDir(), "s.json"))
	j, err := f.StartJournal("a1")
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				step := fmt.Sprintf("route:w%d-%03d", w, i)
				if err := j.Append(Record{Event: StepStarted, Step: step}); err != nil {
					t.Error(err)
					return
				}
				// Written when Append returns: the file holds the line.
				if !journalHas(t, f, step) {
					t.Errorf("%s not in the journal when Append returned", step)
					return
				}
			}
		})
	}
	wg.Wait()
	var mu sync.Mutex
	var waits []func() error
	for i := range 50 {
		mu.Lock()
		waits = append(waits, j.Queue(Record{Event: StepFinished, Step: fmt.Sprintf("q-%02d", i)}))
		mu.Unlock()
	}
	for _, w := range waits {
		if err := w(); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.End("done"); err != nil {
		t.Fatal(err)
	}
	recs := journalRecords(t, f)
	if len(recs) != 1+writers*each+50+1 {
		t.Fatalf("%d records, want %d", len(recs), 1+writers*each+50+1)
	}
	var queued []string
	for _, r := range recs {
		if r.Event == StepFinished {
			queued = append(queued, r.Step)
		}
	}
	for i, s := range queued {
		if want := fmt.Sprintf("q-%02d", i); s != want {
			t.Fatalf("queued record %d is %s, want %s", i, s, want)
		}
	}
}

// A write that fails fails the records it carried and every record after
// it, and never those written before: a write call, or the growth of the
// mapped journal.
func TestAFailedJournalWriteFailsItsRecordsAndLaterOnes(t *testing.T) {
	for _, mapped := range []bool{false, true} {
		t.Run(fmt.Sprint("mapped=", mapped), func(t *testing.T) {
			f := Open(filepath.Join(t.TempDir(), "s.json"))
			j, err := f.StartJournal("a1")
			if err != nil {
				t.Fatal(err)
			}
			if mapped && j.mapped == nil && runtime.GOOS == "linux" {
				t.Fatal("the journal is not mapped on Linux")
			}
			if !mapped && j.mapped != nil {
				if err := j.mapped.close(); err != nil {
					t.Fatal(err)
				}
				j.mapped = nil
			}
			first := j.Queue(Record{Event: StepStarted, Step: "a"})
			if err := first(); err != nil {
				t.Fatal(err)
			}
			j.fh.Close() // the disk goes away
			// A write fails at once; the mapping when it must grow.
			failed := false
			for i := 0; i < 1<<20 && !failed; i++ {
				failed = j.Queue(Record{Event: StepStarted, Step: fmt.Sprintf("b%d", i)})() != nil
			}
			if !failed {
				t.Fatal("records kept being reported written after the file was closed")
			}
			if err := j.Append(Record{Event: StepStarted, Step: "c"}); err == nil {
				t.Fatal("a record after a failed write reported written")
			}
			if err := first(); err != nil {
				t.Fatalf("a record written before the failure now fails: %v", err)
			}
		})
	}
}

// A journal left by a killed apply (the NUL bytes of its mapping after
// its last record, or a torn line) is read as its whole records, and the
// snapshot the next lock writes is appended as a record of its own.
func TestAKilledJournalIsSettledWhole(t *testing.T) {
	for _, tail := range []string{"", "\x00\x00\x00", `{"time":"2026-`} {
		f := Open(filepath.Join(t.TempDir(), "s.json"))
		if err := f.Write(&pools.State{FormatVersion: pools.StateFormatVersion}); err != nil {
			t.Fatal(err)
		}
		j, err := f.StartJournal("a1")
		if err != nil {
			t.Fatal(err)
		}
		route := &pools.Step{ID: "route:x", Kind: pools.StepRoute, Route: &pools.Route{Alias: "x", Lane: pools.Cloud}}
		if err := j.Append(Record{Event: StepFinished, Step: route.ID, Effect: route}); err != nil {
			t.Fatal(err)
		}
		// Killed here, with the file still mapped (or written, then torn).
		fh, err := os.OpenFile(f.JournalPath(), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		fh.WriteString(tail)
		fh.Close()
		if err := f.settle(); err != nil {
			t.Fatal(err)
		}
		st, err := f.Read()
		if err != nil || st.Route("x") == nil {
			t.Fatalf("tail %q: state after settling %+v, %v", tail, st, err)
		}
		recs := journalRecords(t, f)
		if last := recs[len(recs)-1]; last.Event != Snapshot || last.Finished != 1 {
			t.Fatalf("tail %q: the last record is %+v, want the snapshot settle wrote", tail, last)
		}
	}
}

func journalRecords(t *testing.T, f *File) []Record {
	t.Helper()
	fh, err := os.Open(f.JournalPath())
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []Record
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("a line of the journal is not a whole record: %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

func journalHas(t *testing.T, f *File, step string) bool {
	t.Helper()
	data, err := os.ReadFile(f.JournalPath())
	if err != nil {
		t.Error(err)
		return false
	}
	return strings.Contains(string(data), `"step":"`+step+`"`)
}
