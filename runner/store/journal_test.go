package store

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/pools"
)

// A journal left by a killed apply (a torn line, or the NUL bytes an
// older poolc's mapping of the file left after its last record) is read
// as its whole records, and the snapshot the next lock writes is appended
// as a record of its own.
func TestAKilledJournalIsSettledWhole(t *testing.T) {
	for _, tail := range []string{"", "\x00\x00\x00", `{"time":"2026-`} {
		f := Open(filepath.Join(t.TempDir(), "s.json"))
		if err := f.Write(&pools.State{FormatVersion: pools.StateFormatVersion}); err != nil {
			t.Fatal(err)
		}
		j, err := f.BeginJournal("a1")
		if err != nil {
			t.Fatal(err)
		}
		route := &pools.Step{ID: "route:x", Kind: pools.StepRoute, Route: &pools.Route{Alias: "x", Lane: pools.Cloud}}
		if err := j.Append(journal.Record{Event: journal.StepFinished, Step: route.ID, Effect: route}); err != nil {
			t.Fatal(err)
		}
		// Killed here, with a torn line (or NUL bytes) after the record.
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
		if last := recs[len(recs)-1]; last.Event != journal.Snapshot || last.Finished != 1 {
			t.Fatalf("tail %q: the last record is %+v, want the snapshot settle wrote", tail, last)
		}
	}
}

func journalRecords(t *testing.T, f *File) []journal.Record {
	t.Helper()
	fh, err := os.Open(f.JournalPath())
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []journal.Record
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var r journal.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("a line of the journal is not a whole record: %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}
