package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Lines queued from many goroutines at once all reach the file whole,
// each before its wait returns, and lines queued in an order are written
// in that order.
func TestConcurrentLinesAreWrittenWholeAndInQueueOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	a, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				line := fmt.Sprintf("w%d-%03d", w, i)
				if err := a.Queue(line)(); err != nil {
					t.Error(err)
					return
				}
				// Written when the wait returns: the file holds the line.
				if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), `"`+line+`"`) {
					t.Errorf("%s not in the file when its wait returned (%v)", line, err)
					return
				}
			}
		})
	}
	wg.Wait()
	var waits []func() error
	for i := range 50 {
		waits = append(waits, a.Queue(fmt.Sprintf("q-%02d", i)))
	}
	for _, w := range waits {
		if err := w(); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	var queued []string
	total, err := Lines(path, func(_ int, line []byte) error {
		if !strings.HasPrefix(string(line), `"`) || !strings.HasSuffix(string(line), `"`) {
			t.Fatalf("a line is not whole: %q", line)
		}
		if s := strings.Trim(string(line), `"`); strings.HasPrefix(s, "q-") {
			queued = append(queued, s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(path); total != info.Size() {
		t.Fatalf("whole lines take %d bytes of %d", total, info.Size())
	}
	for i, s := range queued {
		if want := fmt.Sprintf("q-%02d", i); s != want {
			t.Fatalf("queued line %d is %s, want %s", i, s, want)
		}
	}
	if len(queued) != 50 {
		t.Fatalf("%d queued lines, want 50", len(queued))
	}
}

// A write that fails fails the lines it carried and every line after it,
// and never those written before.
func TestAFailedWriteFailsItsLinesAndLaterOnes(t *testing.T) {
	a, err := Create(filepath.Join(t.TempDir(), "j"))
	if err != nil {
		t.Fatal(err)
	}
	first := a.Queue("a")
	if err := first(); err != nil {
		t.Fatal(err)
	}
	a.fh.Close() // the disk goes away
	if err := a.Queue("b")(); err == nil {
		t.Fatal("a line reported written after the file was closed")
	}
	if err := a.Queue("c")(); err == nil {
		t.Fatal("a line after a failed write reported written")
	}
	if err := first(); err != nil {
		t.Fatalf("a line written before the failure now fails: %v", err)
	}
}

// Opening a file a killed writer left cuts its torn tail, so the next
// line is whole, and Lines reads whole lines only.
func TestATornTailIsCutAndNeverRead(t *testing.T) {
	for _, tail := range []string{"", `{"seq":9,"eff`, "\x00\x00\x00"} {
		path := filepath.Join(t.TempDir(), "j")
		if err := os.WriteFile(path, []byte("1\n2\n"+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		var got []string
		if _, err := Lines(path, func(_ int, l []byte) error { got = append(got, string(l)); return nil }); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, ",") != "1,2" {
			t.Fatalf("tail %q: lines %q", tail, got)
		}
		a, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Queue(3)(); err != nil {
			t.Fatal(err)
		}
		a.Close()
		if data, _ := os.ReadFile(path); string(data) != "1\n2\n3\n" {
			t.Fatalf("tail %q: file %q after a line was appended", tail, data)
		}
	}
}

// Reset empties the file and releases the waits of the lines it dropped;
// lines queued after it are written.
func TestResetEmptiesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	a, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	a.Queue(1)()
	dropped := a.Queue(2)
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	if err := dropped(); err != nil || a.Size() != 0 {
		t.Fatalf("after Reset: wait %v, size %d", err, a.Size())
	}
	if err := a.Queue(3)(); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "3\n" {
		t.Fatalf("file %q after Reset and a line", data)
	}
}
