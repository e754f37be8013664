package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// list is a value a Log keeps in the tests: the items added to it.
type list struct {
	Items []string `json:"items"`
}

// add is a change to a list.
type add struct {
	Item string `json:"item,omitempty"`
}

func (l *list) ready() {}

func (l *list) add(c add) error {
	if c.Item == "" {
		return fmt.Errorf("nothing to add")
	}
	l.Items = append(l.Items, c.Item)
	return nil
}

func openList(t *testing.T, path string) (list, *Log[list, add]) {
	t.Helper()
	var v list
	l, err := OpenLog(path, &v, (*list).ready, (*list).add)
	if err != nil {
		t.Fatal(err)
	}
	return v, l
}

// Changes recorded ten at a time are all in the value read back, and a
// value that grows does not make every commit a snapshot of it: the
// snapshots stay few, the journal holding the changes between them.
func TestALogThatGrowsSnapshotsRarely(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dir", "list.json")
	v, l := openList(t, path)
	var mu sync.Mutex
	var wg sync.WaitGroup
	const n = 3000
	for g := range 10 {
		wg.Go(func() {
			for i := g; i < n; i += 10 {
				mu.Lock()
				err := l.Record(&v, add{Item: fmt.Sprintf("%05d %s", i, strings.Repeat("x", 200))})
				mu.Unlock()
				if err == nil {
					err = l.Commit(&mu, func() *list { return &v })
				}
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := openList(t, path)
	if len(got.Items) != n || !reflect.DeepEqual(got, v) {
		t.Fatalf("read back %d items; the value in memory has %d", len(got.Items), len(v.Items))
	}
	// Without coalescing, each of the 3,000 changes rewrote the value.
	if l.snapshots > 10 {
		t.Errorf("%d snapshots for %d changes", l.snapshots, n)
	}
}

// The files are written as the sim actuator wrote its world before the
// Log kept it: a snapshot with "journal_seq" as its last member (none
// while no change was recorded), journal lines with "seq" as their first.
func TestALogWritesItsFilesAsBefore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "list.json")
	v, l := openList(t, path)
	var mu sync.Mutex
	if err := l.Snapshot(&v); err != nil {
		t.Fatal(err)
	}
	snap, _ := os.ReadFile(path)
	if string(snap) != `{"items":null}` {
		t.Errorf("the first snapshot is %s", snap)
	}
	for _, item := range []string{"a", "b"} {
		if err := l.Record(&v, add{Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Snapshot(&v); err != nil {
		t.Fatal(err)
	}
	if err := l.Record(&v, add{Item: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(&mu, func() *list { return &v }); err != nil {
		t.Fatal(err)
	}
	snap, _ = os.ReadFile(path)
	journal, _ := os.ReadFile(Beside(path))
	if string(snap) != `{"items":["a","b"],"journal_seq":2}` || string(journal) != `{"seq":3,"item":"c"}`+"\n" {
		t.Errorf("the snapshot is %s and the journal %q", snap, journal)
	}
	// A change whose JSON has no member is its number alone, and reads
	// back as such (here, refused by the list).
	if err := os.WriteFile(Beside(path), []byte(`{"seq":3,"item":"c"}`+"\n"+`{"seq":4}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var again list
	if _, err := OpenLog(path, &again, (*list).ready, (*list).add); err == nil || !strings.Contains(err.Error(), "list.json.journal:2: nothing to add") {
		t.Errorf("reading a journal whose change the value refuses: %v", err)
	}
}
