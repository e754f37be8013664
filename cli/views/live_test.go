package views

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"

	"poolc.dev/poolc/runner"
)

// screen is the little of a VT100 that apply's live display uses: text,
// carriage return, line feed, cursor up (CSI n A), erase to the end of
// the screen (CSI J) and of the line (CSI K); other CSI sequences
// (colors) and OSC strings are read and ignored. Lines that scroll off
// the top stay in lines, as a terminal's scrollback.
type screen struct {
	lines    [][]rune
	row, col int
	width    int
}

func (s *screen) write(data []byte) {
	rs := []rune(string(data))
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; {
		case r == '\r':
			s.col = 0
		case r == '\n':
			s.row++
		case r == 0x1b && i+1 < len(rs) && rs[i+1] == '[':
			j := i + 2
			for j < len(rs) && (rs[j] >= '0' && rs[j] <= '9' || rs[j] == ';') {
				j++
			}
			if j == len(rs) {
				return
			}
			n, err := strconv.Atoi(string(rs[i+2 : j]))
			if err != nil {
				n = 1
			}
			switch rs[j] {
			case 'A':
				s.row = max(0, s.row-n)
			case 'J':
				s.line()
				s.lines[s.row] = s.lines[s.row][:min(s.col, len(s.lines[s.row]))]
				s.lines = s.lines[:s.row+1]
			case 'K':
				s.line()
				s.lines[s.row] = s.lines[s.row][:min(s.col, len(s.lines[s.row]))]
			}
			i = j
		case r == 0x1b && i+1 < len(rs) && rs[i+1] == ']':
			for i < len(rs) && rs[i] != 0x07 {
				i++
			}
		default:
			if s.col >= s.width {
				s.row++
				s.col = 0
			}
			s.line()
			for len(s.lines[s.row]) <= s.col {
				s.lines[s.row] = append(s.lines[s.row], ' ')
			}
			s.lines[s.row][s.col] = r
			s.col++
		}
	}
}

// line makes sure the cursor's line exists.
func (s *screen) line() {
	for len(s.lines) <= s.row {
		s.lines = append(s.lines, nil)
	}
}

func (s *screen) String() string {
	var b strings.Builder
	for _, l := range s.lines {
		b.WriteString(strings.TrimRight(string(l), " "))
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// TestLiveProgressOnAPty drives apply's terminal display through a real
// pseudo-terminal (so the tty's own output processing applies and the
// width comes from the terminal) with a scripted run of three steps,
// and compares what the screen shows after each event with
// testdata/golden/progress-pty.txt (-update rewrites it).
func TestLiveProgressOnAPty(t *testing.T) {
	ptyGolden(t, "progress-pty.txt", 60, 3, []runner.Event{
		{Kind: runner.EventStarted, Step: "prefetch:qwen3-27b@mac-studio", Plugin: "sim"},
		{Kind: runner.EventStarted, Step: "member-ensure:jobs/k1", Plugin: "kube"},
		{Kind: runner.EventProgress, Step: "prefetch:qwen3-27b@mac-studio", Message: "6.1/17 GB", Fraction: 0.36},
		{Kind: runner.EventProgress, Step: "member-ensure:jobs/k1", Message: "waiting for the API server of a cluster whose name is long enough to be cut"},
		{Kind: runner.EventDone, Step: "member-ensure:jobs/k1", Elapsed: 1200 * time.Millisecond},
		{Kind: runner.EventProgress, Step: "prefetch:qwen3-27b@mac-studio", Message: "17/17 GB", Fraction: 1},
		{Kind: runner.EventDone, Step: "prefetch:qwen3-27b@mac-studio", Elapsed: 31 * time.Second},
		{Kind: runner.EventStarted, Step: "start:cognition@mac-studio", Plugin: "sim"},
		{Kind: runner.EventFailed, Step: "start:cognition@mac-studio", Message: "llama-server exited with status 1"},
	})
}

// Two image-syncs in flight each show their member's bytes sent of the
// bytes to send (testdata/golden/progress-pty-bytes.txt, 80 columns).
func TestLiveProgressShowsBytesOnAPty(t *testing.T) {
	ptyGolden(t, "progress-pty-bytes.txt", 80, 2, imageSyncEvents)
}

// imageSyncEvents is a run of two image-syncs that report bytes.
var imageSyncEvents = []runner.Event{
	{Kind: runner.EventStarted, Step: "image-sync:harness/pool-node-b", Plugin: "image-sync"},
	{Kind: runner.EventStarted, Step: "image-sync:harness/pool-node-c", Plugin: "image-sync"},
	{Kind: runner.EventProgress, Step: "image-sync:harness/pool-node-b", BytesDone: 0, BytesTotal: 30_100_000},
	{Kind: runner.EventProgress, Step: "image-sync:harness/pool-node-c", Fraction: 0.25, BytesDone: 1_000_000, BytesTotal: 4_000_000},
	{Kind: runner.EventProgress, Step: "image-sync:harness/pool-node-b", Fraction: 0.41, BytesDone: 12_400_000, BytesTotal: 30_100_000},
	{Kind: runner.EventProgress, Step: "image-sync:harness/pool-node-c", Fraction: 1, BytesDone: 4_000_000, BytesTotal: 4_000_000},
	{Kind: runner.EventDone, Step: "image-sync:harness/pool-node-c", Elapsed: 900 * time.Millisecond},
	{Kind: runner.EventProgress, Step: "image-sync:harness/pool-node-b", Fraction: 1, BytesDone: 30_100_000, BytesTotal: 30_100_000},
	{Kind: runner.EventDone, Step: "image-sync:harness/pool-node-b", Elapsed: 2 * time.Second},
}

// The CI view (one line per event) shows the bytes of each report.
func TestLineProgressShowsBytes(t *testing.T) {
	var b strings.Builder
	view := NewProgress(&b, false, false, 2)
	for _, e := range imageSyncEvents[:5] {
		view.Event(e)
	}
	want := `[0/2] started   image-sync:harness/pool-node-b (image-sync)
[0/2] started   image-sync:harness/pool-node-c (image-sync)
[0/2] progress  image-sync:harness/pool-node-b: 0 B of 30.1 MB sent
[0/2] progress  image-sync:harness/pool-node-c: 1.0 MB of 4.0 MB sent (25%)
[0/2] progress  image-sync:harness/pool-node-b: 12.4 MB of 30.1 MB sent (41%)
`
	if b.String() != want {
		t.Errorf("line view:\n%s\nwant:\n%s", b.String(), want)
	}
}

// ptyGolden shows events of a run of total steps on the live display of
// a pseudo-terminal cols wide and compares the screen after each with
// testdata/golden/NAME.
func ptyGolden(t *testing.T, name string, cols, total int, events []runner.Event) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("opening a pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(tty, &pty.Winsize{Rows: 24, Cols: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	if !term.IsTerminal(int(tty.Fd())) {
		t.Fatal("the pty's end is not seen as a terminal")
	}
	out := make(chan []byte, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			if n > 0 {
				out <- bytes.Clone(buf[:n])
			}
			if err != nil {
				close(out)
				return
			}
		}
	}()
	scr := &screen{width: cols}
	// sync writes a marker (an OSC string the screen ignores) after the
	// display's output and reads the terminal up to it.
	mark := 0
	sync := func() {
		mark++
		marker := fmt.Sprintf("\033]poolc-test;%d\007", mark)
		io.WriteString(tty, marker)
		var got []byte
		deadline := time.After(10 * time.Second)
		for !bytes.Contains(got, []byte(marker)) {
			select {
			case b := <-out:
				got = append(got, b...)
			case <-deadline:
				t.Fatalf("the terminal did not echo marker %d; read %q", mark, got)
			}
		}
		scr.write(got)
	}

	view := NewProgress(tty, false, term.IsTerminal(int(tty.Fd())), total)
	if _, ok := view.(*liveProgress); !ok {
		t.Fatalf("on a terminal the display is %T, want the live display", view)
	}
	var golden strings.Builder
	for _, e := range events {
		view.Event(e)
		sync()
		fmt.Fprintf(&golden, "--- after %s %s\n%s", e.Kind, e.Step, scr)
	}
	view.Close()
	sync()
	fmt.Fprintf(&golden, "--- after Close\n%s", scr)

	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(golden.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if golden.String() != string(want) {
		t.Errorf("the screen differs from %s (-update rewrites it):\n%s", path, golden.String())
	}
}

// update rewrites the golden files instead of comparing with them.
var update = flag.Bool("update", false, "rewrite golden files")
