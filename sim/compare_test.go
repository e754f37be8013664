package sim

import (
	"reflect"
	"testing"
)

func TestCompareJudgesEachMetricByItsDirection(t *testing.T) {
	base := &Result{Metrics: Metrics{SLOPercent: 90, ToCloud: 10, Requests: 100, GBReloaded: 30}}
	head := &Result{Metrics: Metrics{SLOPercent: 95, ToCloud: 12, Requests: 120, GBReloaded: 30.001}}
	runs := []Outcome{{Config: "base", Mode: "auto", Result: base}, {Config: "head", Mode: "auto", Result: head}}
	ds := Compare(runs)
	if len(ds) != 1 {
		t.Fatalf("%d modes compared, want 1", len(ds))
	}
	got := map[string]string{}
	for _, d := range ds[0] {
		got[d.Metric] = d.Verdict + " " + d.Signed()
	}
	for metric, want := range map[string]string{
		"slo_percent": "better +5.00", // higher is better
		"to_cloud":    "worse +2",     // lower is better
		"requests":    "changed +20",  // neither
		"gb_reloaded": "same 0",       // equal as shown
	} {
		if got[metric] != want {
			t.Errorf("%s: %q, want %q", metric, got[metric], want)
		}
	}
	if v := Verdicts(ds[0]); v != "worse: to cloud; better: SLO %" {
		t.Errorf("verdicts %q", v)
	}
}

func TestReportMetricsShowAbsentAliasOnlyInComparisons(t *testing.T) {
	keys := func(ms []Metric) (out []string) {
		for _, m := range ms {
			if m.CompareOnly {
				out = append(out, m.Key)
			}
		}
		return out
	}
	if k := keys(ReportMetrics(false)); len(k) != 0 {
		t.Errorf("a single run shows %v", k)
	}
	if k := keys(ReportMetrics(true)); !reflect.DeepEqual(k, []string{"absent_alias"}) {
		t.Errorf("a comparison shows %v of the compare-only metrics", k)
	}
}
