package simactuator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// manyLanes returns n start steps of lanes on ten nodes.
func manyLanes(n int) []pools.Step {
	steps := make([]pools.Step, n)
	for i := range steps {
		l := pools.LaneState{Name: fmt.Sprintf("lane-%05d", i), Node: fmt.Sprintf("node-%d", i%10), Model: "m",
			Port: 8000 + i/10, Residency: pools.KeepWarm, MemoryGB: 1, Args: []string{"--ctx-size", "8192"}}
		steps[i] = start(l)
	}
	return steps
}

// Steps applied ten at a time are all in the world read back from its
// files, which hold compact JSON. (That a world that grows does not make
// every write a snapshot of it is journal.Log's test.)
func TestTheWorldFileCoalescesWrites(t *testing.T) {
	s, dir := configured(t, nil)
	steps := manyLanes(3000)
	var wg sync.WaitGroup
	for g := range 10 {
		wg.Go(func() {
			for i := g; i < len(steps); i += 10 {
				if resp := apply(s, steps[i]); resp.Diagnostics.HasErrors() {
					t.Error(resp.Diagnostics)
				}
			}
		})
	}
	wg.Wait()
	path := filepath.Join(dir, ".poolc", "sim-world.json")
	got, _, err := OpenWorld(path)
	if err != nil {
		t.Fatal(err)
	}
	s.world.settle()
	if len(got.Fleet.Lanes) != len(steps) || !reflect.DeepEqual(got, s.world) {
		t.Fatalf("read back %d lanes; the world in memory has %d", len(got.Fleet.Lanes), len(s.world.Fleet.Lanes))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("\n ")) {
		t.Error("the world file is indented")
	}
	// Both files are written as the sim wrote them before its world was
	// kept in a journal.Log.
	var snap struct {
		World
		Seq uint64 `json:"journal_seq,omitempty"`
	}
	asBefore(t, data, &snap)
	journal, _ := os.ReadFile(path + ".journal")
	for line := range bytes.Lines(journal) {
		var c struct {
			Seq uint64 `json:"seq"`
			change
		}
		asBefore(t, bytes.TrimSuffix(line, []byte("\n")), &c)
	}
}

// asBefore checks that data is v's JSON: what encoding/json writes of v
// once v is read from data.
func asBefore(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(v); !bytes.Equal(again, data) {
		t.Fatalf("written\n%.300s\nwhere the sim wrote\n%.300s", data, again)
	}
}

// A snapshot covers the journal before it: a world read after a snapshot
// and more changes holds each change once, and the journal written after
// a process left a torn line behind keeps whole lines only. The snapshot
// is written as the sim wrote it before its world was kept in a
// journal.Log, so a world file of that sim still reads.
func TestTheJournalReplaysEachChangeOnce(t *testing.T) {
	s, dir := configured(t, nil)
	path := filepath.Join(dir, ".poolc", "sim-world.json")
	steps := manyLanes(20)
	for _, st := range steps[:10] {
		apply(s, st)
	}
	// A kill between writing a snapshot and emptying the journal leaves
	// changes the snapshot holds in the journal.
	journal, _ := os.ReadFile(path + ".journal")
	lines := bytes.Split(bytes.TrimSuffix(journal, []byte("\n")), []byte("\n"))
	var last struct {
		Seq uint64 `json:"seq"`
	}
	if err := json.Unmarshal(lines[len(lines)-1], &last); err != nil || last.Seq == 0 {
		t.Fatalf("the journal's last line %q: %v", lines[len(lines)-1], err)
	}
	s.mu.Lock()
	s.world.settle()
	snap, _ := json.Marshal(struct {
		World
		Seq uint64 `json:"journal_seq,omitempty"`
	}{s.world, last.Seq})
	s.mu.Unlock()
	if err := os.WriteFile(path, snap, 0o644); err != nil {
		t.Fatal(err)
	}
	// And a write cut short leaves a torn line.
	torn := append(journal, []byte(`{"seq":99,"effect":{"id":"sta`)...)
	if err := os.WriteFile(path+".journal", torn, 0o644); err != nil {
		t.Fatal(err)
	}
	again := New("test")
	if resp := again.Configure(context.Background(), sdk.ConfigureRequest{WorkDir: dir}); resp.Diagnostics.HasErrors() {
		t.Fatal(resp.Diagnostics)
	}
	for _, st := range steps[10:] {
		if resp := apply(again, st); resp.Diagnostics.HasErrors() {
			t.Fatal(resp.Diagnostics)
		}
	}
	w, _, err := OpenWorld(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Fleet.Lanes) != 20 || len(w.Violations) != 0 {
		t.Fatalf("%d lanes, violations %v", len(w.Fleet.Lanes), w.Violations)
	}
	for key, n := range w.Starts {
		if n != 1 {
			t.Errorf("lane %s started %d times", key, n)
		}
	}
}

// killedWorld is the environment variable that makes the test binary a
// process applying steps to the world in that directory, printing each
// step's ID once its Apply has returned.
const killedWorld = "POOLC_SIM_TEST_KILLED_WORLD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(killedWorld); dir != "" {
		applyUntilKilled(dir)
		return
	}
	os.Exit(m.Run())
}

func applyUntilKilled(dir string) {
	s := New("test")
	if resp := s.Configure(context.Background(), sdk.ConfigureRequest{WorkDir: dir}); resp.Diagnostics.HasErrors() {
		fmt.Fprintln(os.Stderr, resp.Diagnostics)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	steps := manyLanes(20000)
	for g := range 10 {
		wg.Go(func() {
			for i := g; i < len(steps); i += 10 {
				if resp := apply(s, steps[i]); resp.Diagnostics.HasErrors() {
					fmt.Fprintln(os.Stderr, resp.Diagnostics)
					os.Exit(1)
				}
				mu.Lock()
				out.WriteString(strconv.Itoa(i) + "\n")
				out.Flush()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// SIGKILL the process applying steps at random moments: every step whose
// Apply had returned is in the world read back, the world always reads,
// and a lane is never started twice.
func TestAKilledSimLosesNoReportedStep(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 2026))
	checked := 0
	for trial := range 6 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), killedWorld+"="+dir)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The kill lands a random while after the first reported step,
		// however long a loaded machine takes to get there.
		var out bytes.Buffer
		first, read := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(read)
			buf := make([]byte, 4096)
			for once := false; ; {
				n, err := stdout.Read(buf)
				out.Write(buf[:n])
				if n > 0 && !once {
					once = true
					close(first)
				}
				if err != nil {
					return
				}
			}
		}()
		select {
		case <-first:
		case <-time.After(time.Minute):
		}
		time.Sleep(time.Duration(r.IntN(300)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		<-read
		cmd.Wait()
		reported := bytes.Fields(out.Bytes())
		if len(reported) == 0 || len(reported) == 20000 {
			t.Logf("trial %d: %d steps reported before the kill; stderr: %s", trial, len(reported), errOut.String())
			continue
		}
		checked++
		w, _, err := OpenWorld(filepath.Join(dir, ".poolc", "sim-world.json"))
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		for _, f := range reported {
			i, _ := strconv.Atoi(string(f))
			name := fmt.Sprintf("lane-%05d", i)
			if w.Fleet.Lane(name, fmt.Sprintf("node-%d", i%10)) == nil {
				t.Fatalf("trial %d: step %d was reported done but its lane is not in the world (%d reported, %d in the world)", trial, i, len(reported), len(w.Fleet.Lanes))
			}
		}
		for key, n := range w.Starts {
			if n != 1 {
				t.Fatalf("trial %d: lane %s started %d times", trial, key, n)
			}
		}
		t.Logf("trial %d: %d steps reported, %d lanes in the world", trial, len(reported), len(w.Fleet.Lanes))
	}
	if checked == 0 {
		t.Fatal("no trial was killed between its first and its last step: nothing was checked")
	}
}

// Whatever a world file and its journal hold, reading them returns a
// world or an error, never a panic.
func FuzzReadWorld(f *testing.F) {
	f.Add([]byte(`{"fleet":{"lanes":[]},"journal_seq":1}`), []byte(`{"seq":2,"attempt":"x"}`+"\n"+`{"seq":3,"effect":{"id":"s","kind":"start"}}`+"\n"))
	f.Add([]byte(``), []byte(`{"seq":1,"effect":{"id":"r","kind":"route","route":{"alias":"a","lane":"cloud"}},"seconds":1}`+"\n"+`{"seq":2,"viol`))
	f.Add([]byte(`{"starts":null}`), []byte(`{"seq":1,"effect":{"id":"m","kind":"member-remove","member":{}}}`+"\n"))
	f.Fuzz(func(t *testing.T, world, journal []byte) {
		path := filepath.Join(t.TempDir(), "world.json")
		if len(world) > 0 {
			os.WriteFile(path, world, 0o644)
		}
		os.WriteFile(path+".journal", journal, 0o644)
		OpenWorld(path)
	})
}
