package store

import (
	"path/filepath"
	"strings"
	"testing"

	"poolc.dev/poolc/pools"
)

// writeState leaves a state of pool p at path, at serial (a write counts
// one up).
func writeState(t *testing.T, path, lineage string, serial int64) *File {
	t.Helper()
	f := Open(path)
	if err := f.Write(&pools.State{Pool: "p", Lineage: lineage, Serial: serial - 1}); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCopyKeepsLineageAndNeverGoesBack(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name         string
		toLineage    string
		toSerial     int64
		force        bool
		want         string // an error, or "" for a copy
		wantToSerial int64
	}{
		{name: "empty destination", wantToSerial: 6},
		{name: "same lineage behind", toLineage: "L", toSerial: 3, wantToSerial: 6},
		{name: "same lineage ahead", toLineage: "L", toSerial: 9, want: "holds a later state of the same lineage (serial 9 > 5): copying would go back; pass --force"},
		{name: "another lineage", toLineage: "M", toSerial: 1, want: "holds a state of another lineage (M, serial 1); pass --force"},
		{name: "another lineage forced", toLineage: "M", toSerial: 7, force: true, wantToSerial: 8},
	} {
		from := writeState(t, filepath.Join(dir, c.name+"-from.json"), "L", 5)
		to := Open(filepath.Join(dir, c.name+"-to.json"))
		if c.toLineage != "" {
			to = writeState(t, to.Path, c.toLineage, c.toSerial)
		}
		got, err := Copy(CopyRequest{From: from, To: to, Pool: "p", Operation: "state push", Version: "test", Force: c.force})
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		st, err := to.Read()
		if err != nil {
			t.Fatal(err)
		}
		if got.Lineage != "L" || got.Serial != 5 || got.ToSerial != c.wantToSerial || st.Lineage != "L" || st.Serial != c.wantToSerial {
			t.Errorf("%s: copied %+v, destination lineage %s serial %d; want lineage L serial %d (one past the later of both)", c.name, got, st.Lineage, st.Serial, c.wantToSerial)
		}
	}
}

func TestCopyRefusesOneBackendAndNoState(t *testing.T) {
	dir := t.TempDir()
	f := writeState(t, filepath.Join(dir, "s.json"), "L", 1)
	if _, err := Copy(CopyRequest{From: f, To: Open(f.Path), Pool: "p"}); err == nil || !strings.Contains(err.Error(), "is both the source and the destination") {
		t.Errorf("one backend: %v", err)
	}
	if _, err := Copy(CopyRequest{From: Open(filepath.Join(dir, "none.json")), To: Open(filepath.Join(dir, "to.json")), Pool: "p"}); err == nil || !strings.Contains(err.Error(), "holds no state") {
		t.Errorf("no state: %v", err)
	}
}
