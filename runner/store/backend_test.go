package store_test

import (
	"os"
	"path/filepath"
	"testing"

	"poolc.dev/poolc/internal/testing/storetest"
	"poolc.dev/poolc/runner/store"
)

func TestTheJournalTellsAnInterruptedApply(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.json")
	// The kill leaves a torn line after the last whole record.
	torn := func(b store.Backend) {
		fh, err := os.OpenFile(b.(*store.File).JournalPath(), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if _, err := fh.WriteString(`{"time": "2026-`); err != nil {
			t.Fatal(err)
		}
	}
	storetest.JournalTellsAnInterruptedApply(t, func() store.Backend { return store.Open(path) }, torn)
}
