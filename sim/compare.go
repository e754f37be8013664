package sim

import (
	"fmt"
	"strings"

	"poolc.dev/poolc/pools"
)

// Outcome is one run of a report: a configuration ("head", or "base"
// when two are compared) in a mode.
type Outcome struct {
	Config string  `json:"config"`
	Mode   Mode    `json:"mode"`
	Result *Result `json:"result"`
}

// Metric is one metric of a report: its label, its key in JSON and which
// way is better (+1 higher, -1 lower, 0 neither: the metric describes the
// run, not its quality).
type Metric struct {
	Name, Key string
	Value     func(Metrics) float64
	Better    int
	// CompareOnly metrics appear only when two configurations are
	// compared.
	CompareOnly bool
}

var metrics = []Metric{
	{Name: "SLO %", Key: "slo_percent", Value: func(m Metrics) float64 { return m.SLOPercent }, Better: +1},
	{Name: "requests", Key: "requests", Value: func(m Metrics) float64 { return float64(m.Requests) }},
	{Name: "served", Key: "served", Value: func(m Metrics) float64 { return float64(m.Served) }, Better: +1},
	{Name: "to cloud", Key: "to_cloud", Value: func(m Metrics) float64 { return float64(m.ToCloud) }, Better: -1},
	{Name: "failed", Key: "failed", Value: func(m Metrics) float64 { return float64(m.Failed) }, Better: -1},
	{Name: "absent alias", Key: "absent_alias", Value: func(m Metrics) float64 { return float64(m.AbsentAlias) }, Better: -1, CompareOnly: true},
	{Name: "cold waits", Key: "cold_waits", Value: func(m Metrics) float64 { return float64(m.ColdWaits) }, Better: -1},
	{Name: "cold wait p95 s", Key: "cold_wait_p95_seconds", Value: func(m Metrics) float64 { return m.ColdWaitP95Seconds }, Better: -1},
	{Name: "GB reloaded", Key: "gb_reloaded", Value: func(m Metrics) float64 { return m.GBReloaded }, Better: -1},
	{Name: "GB loaded by plans", Key: "gb_loaded_by_plans", Value: func(m Metrics) float64 { return m.GBLoadedByPlans }, Better: -1},
	{Name: "interruptions", Key: "interruptions", Value: func(m Metrics) float64 { return float64(m.Interruptions) }, Better: -1},
	{Name: "residency changes/h", Key: "residency_changes_per_hour", Value: func(m Metrics) float64 { return m.ResidencyChangesPerHour }, Better: -1},
	{Name: "evictions", Key: "evictions", Value: func(m Metrics) float64 { return float64(m.Evictions) }, Better: -1},
	{Name: "guard aborts", Key: "guard_aborts", Value: func(m Metrics) float64 { return float64(m.GuardAborts) }, Better: -1},
	{Name: "applies", Key: "applies", Value: func(m Metrics) float64 { return float64(m.Applies) }},
}

// ReportMetrics are the metrics a report shows, in its order; compare
// adds those that only a comparison shows.
func ReportMetrics(compare bool) []Metric {
	var out []Metric
	for _, m := range metrics {
		if compare || !m.CompareOnly {
			out = append(out, m)
		}
	}
	return out
}

// Format writes a value of the metric as reports show it: SLO with two
// decimals, the others as short as they are.
func (m Metric) Format(v float64) string {
	if m.Key == "slo_percent" {
		return fmt.Sprintf("%.2f", v)
	}
	return pools.Num(v)
}

// Delta is one metric of one mode, head minus base, with its verdict:
// "same" when equal as shown (to two decimals), else "better" or "worse"
// by the metric's direction, or "changed" for a metric that has none.
type Delta struct {
	Mode    Mode    `json:"mode"`
	Metric  string  `json:"metric"`
	Base    float64 `json:"base"`
	Head    float64 `json:"head"`
	Delta   float64 `json:"delta"`
	Verdict string  `json:"verdict"`
	metric  Metric
}

// Of is the metric the delta is of.
func (d Delta) Of() Metric { return d.metric }

func verdict(m Metric, base, head float64) string {
	d := head - base
	switch {
	case pools.Num(d) == "0":
		return "same"
	case m.Better == 0:
		return "changed"
	case (d > 0) == (m.Better > 0):
		return "better"
	}
	return "worse"
}

// Compare pairs each mode's base and head runs, in the order of the base
// runs' modes: one list of deltas per mode.
func Compare(runs []Outcome) [][]Delta {
	base := map[Mode]*Result{}
	var modes []Mode
	for _, r := range runs {
		if r.Config == "base" {
			base[r.Mode] = r.Result
			modes = append(modes, r.Mode)
		}
	}
	var out [][]Delta
	for _, mode := range modes {
		for _, r := range runs {
			if r.Config != "head" || r.Mode != mode {
				continue
			}
			var ds []Delta
			for _, m := range ReportMetrics(true) {
				b, h := m.Value(base[mode].Metrics), m.Value(r.Result.Metrics)
				ds = append(ds, Delta{Mode: mode, Metric: m.Key, Base: b, Head: h, Delta: h - b, Verdict: verdict(m, b, h), metric: m})
			}
			out = append(out, ds)
		}
	}
	return out
}

// Signed writes the difference with its sign.
func (d Delta) Signed() string {
	s := d.metric.Format(d.Delta)
	if d.Delta > 0 && s != "0" && s != "0.00" {
		s = "+" + s
	}
	return s
}

// Verdicts is the verdict line of one mode's deltas: which metrics got
// worse, which better.
func Verdicts(ds []Delta) string {
	var worse, better []string
	for _, d := range ds {
		switch d.Verdict {
		case "worse":
			worse = append(worse, d.metric.Name)
		case "better":
			better = append(better, d.metric.Name)
		}
	}
	list := func(names []string) string {
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("worse: %s; better: %s", list(worse), list(better))
}

// AbsentNotes are the "absent" timeline entries of the runs, once per
// configuration: what the scenario names that a configuration lacks.
func AbsentNotes(runs []Outcome) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range runs {
		for _, a := range r.Result.Timeline {
			note := r.Config + ": " + a.Detail
			if a.Kind == "absent" && !seen[note] {
				seen[note] = true
				out = append(out, note)
			}
		}
	}
	return out
}
