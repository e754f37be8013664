package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/pools"
)

func TestWriteGivesALineageAndCountsSerials(t *testing.T) {
	f := Open(filepath.Join(t.TempDir(), "poolc.state.json"))
	st, err := f.Read()
	if err != nil || st.Serial != 0 || st.Lineage != "" {
		t.Fatalf("empty state = %+v, %v", st, err)
	}
	st.Pool = "lab"
	st.Lanes = []pools.LaneState{{Name: "chat", Node: "a", Model: "m", Port: 1, Residency: pools.KeepWarm, MemoryGB: 3, Loaded: true}}
	if err := f.Write(st); err != nil {
		t.Fatal(err)
	}
	lineage := st.Lineage
	if err := f.Write(st); err != nil {
		t.Fatal(err)
	}
	got, err := f.Read()
	if err != nil {
		t.Fatal(err)
	}
	if got.Serial != 2 || got.Lineage != lineage || len(lineage) != 36 || !reflect.DeepEqual(got.Lanes, st.Lanes) {
		t.Fatalf("read back %+v", got)
	}
}

func TestASecondLockFailsWithTheHoldersInfo(t *testing.T) {
	f := Open(filepath.Join(t.TempDir(), "s.json"))
	first, err := f.Lock(context.Background(), NewLockInfo("apply", "test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = f.Lock(ctx, NewLockInfo("apply", "test"), nil)
	var locked *LockedError
	if !errors.As(err, &locked) || locked.Info.ID != first.Info.ID {
		t.Fatalf("second lock: %v", err)
	}
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Errorf("gave up after %v, before the lock timeout", waited)
	}
	for _, want := range []string{first.Info.ID, "poolc force-unlock", "for apply"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	// Released, the lock can be taken again.
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Lock(context.Background(), NewLockInfo("apply", "test"), nil); err != nil {
		t.Fatal(err)
	}
}

func TestALockWaitsForItsHolder(t *testing.T) {
	f := Open(filepath.Join(t.TempDir(), "s.json"))
	first, _ := f.Lock(context.Background(), NewLockInfo("apply", "test"), nil)
	go func() {
		time.Sleep(100 * time.Millisecond)
		first.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := f.Lock(ctx, NewLockInfo("apply", "test"), nil); err != nil {
		t.Fatalf("waiting for the lock: %v", err)
	}
}

func TestALockOfADeadProcessIsTakenOver(t *testing.T) {
	f := Open(filepath.Join(t.TempDir(), "s.json"))
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := NewLockInfo("apply", "test")
	dead.PID = cmd.Process.Pid
	data, _ := json.Marshal(dead)
	os.WriteFile(f.LockPath(), data, 0o644) // left by the dead process; no OS lock holds it
	var told LockInfo
	if _, err := f.Lock(context.Background(), NewLockInfo("apply", "test"), func(i LockInfo) { told = i }); err != nil {
		t.Fatalf("stale lock not taken over: %v", err)
	}
	if told.ID != dead.ID {
		t.Errorf("not told about the stale lock")
	}
}

func TestForceUnlockNeedsTheLockID(t *testing.T) {
	f := Open(filepath.Join(t.TempDir(), "s.json"))
	l, _ := f.Lock(context.Background(), NewLockInfo("apply", "test"), nil)
	if err := f.ForceUnlock("wrong"); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("force-unlock with a wrong ID: %v", err)
	}
	if err := f.ForceUnlock(l.Info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.LockPath()); !os.IsNotExist(err) {
		t.Fatal("lock file still there")
	}
	if err := f.ForceUnlock(l.Info.ID); err == nil || !strings.Contains(err.Error(), "not locked") {
		t.Fatalf("force-unlock without a lock: %v", err)
	}
}

// A kill between snapshots loses nothing: Read replays the effects the
// journal recorded after the last snapshot it announced, and only those,
// and the next lock writes them to the state.
func TestReadReplaysTheStepsFinishedAfterTheLastSnapshot(t *testing.T) {
	f := Open(filepath.Join(t.TempDir(), "s.json"))
	route := func(alias string) *pools.Step {
		return &pools.Step{ID: "route:" + alias, Kind: pools.StepRoute, Route: &pools.Route{Alias: alias, Lane: pools.Cloud}}
	}
	j, err := f.BeginJournal("a1")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Read()
	st.Pool = "lab"
	for _, a := range []string{"a", "b"} {
		j.Append(journal.Record{Event: journal.StepFinished, Step: "route:" + a, Effect: route(a)})
		st.Fleet.Apply(*route(a))
	}
	if err := j.Snapshot(st, 2); err != nil {
		t.Fatal(err)
	}
	j.Append(journal.Record{Event: journal.StepFinished, Step: "route:c", Effect: route("c")})
	// Killed here, before the next snapshot.
	got, err := f.Read()
	if err != nil || len(got.Routes) != 3 || got.Serial != 1 {
		t.Fatalf("read after the kill: %+v %v", got, err)
	}
	l, err := f.Lock(context.Background(), NewLockInfo("apply", "test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	raw, _ := f.readSnapshot()
	if len(raw.Routes) != 3 || raw.Serial != 2 {
		t.Fatalf("the lock did not settle the journal: %+v", raw)
	}
	if again, _ := f.Read(); len(again.Routes) != 3 || again.Serial != 2 {
		t.Fatalf("replayed twice: %+v", again)
	}
}

// --state pointing at another pool's state is refused, naming both pools.
func TestAStateOfAnotherPoolIsRefused(t *testing.T) {
	f := Open(filepath.Join(t.TempDir(), "s.json"))
	st, _ := f.Read()
	st.Pool = "pool-a"
	f.Write(st)
	if _, err := ReadPool(f, "pool-a"); err != nil {
		t.Fatal(err)
	}
	_, err := ReadPool(f, "pool-b")
	if err == nil || !strings.Contains(err.Error(), `"pool-a"`) || !strings.Contains(err.Error(), `"pool-b"`) {
		t.Fatalf("another pool's state: %v", err)
	}
}

// Temporary files a killed write left are removed by the next lock.
func TestTheLockCleansUpTemporaryFilesOfAKilledWrite(t *testing.T) {
	dir := t.TempDir()
	f := Open(filepath.Join(dir, "s.json"))
	left := filepath.Join(dir, ".s.json.tmp-deadbeef")
	os.WriteFile(left, []byte("{half"), 0o600)
	l, err := f.Lock(context.Background(), NewLockInfo("apply", "test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatal("the temporary file is still there")
	}
}

// An apply that ended with every finished step in its last snapshot on
// disk leaves a journal of three records (start, that snapshot, end),
// which reads as the whole one did; one whose last steps are in no
// snapshot on disk keeps every record, for Read to replay them.
func TestAnEndedApplyFoldsItsJournalOnlyWhenTheSnapshotHoldsEverything(t *testing.T) {
	route := func(alias string) *pools.Step {
		return &pools.Step{ID: "route:" + alias, Kind: pools.StepRoute, Route: &pools.Route{Alias: alias, Lane: pools.Cloud}}
	}
	run := func(t *testing.T, snapshotAll bool) *File {
		f := Open(filepath.Join(t.TempDir(), "s.json"))
		j, err := f.BeginJournal("a1")
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Read()
		st.Pool = "lab"
		for i, a := range []string{"a", "b", "c"} {
			j.Append(journal.Record{Event: journal.StepStarted, Step: "route:" + a})
			j.Append(journal.Record{Event: journal.StepFinished, Step: "route:" + a, Effect: route(a)})
			st.Fleet.Apply(*route(a))
			if i == 1 || snapshotAll && i == 2 {
				if err := j.Snapshot(st, i+1); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := j.End("3 done"); err != nil {
			t.Fatal(err)
		}
		return f
	}
	t.Run("folded", func(t *testing.T) {
		f := run(t, true)
		recs := journalRecords(t, f)
		var events []string
		for _, r := range recs {
			events = append(events, string(r.Event))
		}
		if got := strings.Join(events, " "); got != "apply-started snapshot apply-ended" {
			t.Fatalf("journal after the apply: %s; want it folded to apply-started snapshot apply-ended", got)
		}
		st, err := f.Read()
		if err != nil || len(st.Routes) != 3 || st.Serial != 2 {
			t.Fatalf("read after the fold: %+v %v", st, err)
		}
		if last, err := f.LastApply(); last != nil || err != nil {
			t.Fatalf("a folded journal tells an interrupted apply: %+v %v", last, err)
		}
	})
	t.Run("kept", func(t *testing.T) {
		f := run(t, false)
		if n := len(journalRecords(t, f)); n != 1+6+1+1 {
			t.Fatalf("journal has %d records; want all 9 kept (step c is in no snapshot)", n)
		}
		st, err := f.Read()
		if err != nil || len(st.Routes) != 3 || st.Serial != 1 {
			t.Fatalf("read: %+v %v", st, err)
		}
	})
}

// A command reads the state file and the journal once: after the lock's
// settle has read them, neither Read, LastApply nor BeginJournal reads
// them again (they are made unreadable here to show it).
func TestACommandReadsTheStateAndTheJournalOnce(t *testing.T) {
	f := Open(filepath.Join(t.TempDir(), "s.json"))
	st := &pools.State{FormatVersion: pools.StateFormatVersion, Pool: "lab"}
	if err := f.Write(st); err != nil {
		t.Fatal(err)
	}
	l, err := f.Lock(context.Background(), NewLockInfo("apply", "test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	for _, p := range []string{f.Path, f.JournalPath()} {
		if err := os.WriteFile(p, []byte("not read again\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := f.Read(); err != nil || got.Serial != 1 {
		t.Fatalf("Read after the lock: %+v, %v", got, err)
	}
	if last, err := f.LastApply(); last != nil || err != nil {
		t.Fatalf("LastApply after the lock: %+v, %v", last, err)
	}
	j, err := f.BeginJournal("a1")
	if err != nil {
		t.Fatalf("BeginJournal read the state file again: %v", err)
	}
	j.End("")
	recs := journalRecords(t, f)
	if recs[0].Event != journal.ApplyStarted || recs[0].Lineage != st.Lineage || recs[0].Serial != 1 {
		t.Fatalf("the journal starts with %+v, want the state read under the lock", recs[0])
	}
}
