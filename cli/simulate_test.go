package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// A change that drops the keep-warm lane an alias falls back to: simulate
// --base shows the SLO drop and the requests it sends to the cloud, side
// by side, on the same scenario and seed.
func TestSimulateBaseShowsTheRegression(t *testing.T) {
	ar, err := txtar.ParseFile("testdata/script/simulate.txtar")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range ar.Files {
		path := filepath.Join(dir, f.Name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errs bytes.Buffer
	code := Main([]string{"simulate", "--scenario", filepath.Join(dir, "crash.hcl"), "--base", filepath.Join(dir, "pool"),
		"--mode", "off", "--format", "json", filepath.Join(dir, "dropped")}, Stdio{Out: &out, Err: &errs})
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	var report struct {
		Runs []struct {
			Config string
			Result struct {
				Metrics struct {
					SLOPercent float64 `json:"slo_percent"`
					ToCloud    int     `json:"to_cloud"`
				}
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	base, head := report.Runs[0].Result.Metrics, report.Runs[1].Result.Metrics
	if report.Runs[0].Config != "base" || report.Runs[1].Config != "head" {
		t.Fatalf("columns: %+v", report.Runs)
	}
	if head.SLOPercent >= base.SLOPercent || head.ToCloud <= base.ToCloud {
		t.Errorf("dropping the fallback lane should cost SLO and send requests to the cloud: base %+v, head %+v", base, head)
	}
}
