package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
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
// it, and never those written before.
func TestAFailedJournalWriteFailsItsRecordsAndLaterOnes(t *testing.T) {
	f := Open(filepath.Join(t.TempDir(), "s.json"))
	j, err := f.StartJournal("a1")
	if err != nil {
		t.Fatal(err)
	}
	first := j.Queue(Record{Event: StepStarted, Step: "a"})
	if err := first(); err != nil {
		t.Fatal(err)
	}
	j.fh.Close() // the disk goes away
	second := j.Queue(Record{Event: StepStarted, Step: "b"})
	if err := second(); err == nil {
		t.Fatal("a record whose write failed reported written")
	}
	if err := j.Append(Record{Event: StepStarted, Step: "c"}); err == nil {
		t.Fatal("a record after a failed write reported written")
	}
	if err := first(); err != nil {
		t.Fatalf("a record written before the failure now fails: %v", err)
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
