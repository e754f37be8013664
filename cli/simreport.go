package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/sim"
)

// simRow is one metric of the report. better says which way is better:
// +1 higher, -1 lower, 0 neither (the metric describes the run, not its
// quality).
type simRow struct {
	name, key string
	value     func(sim.Metrics) float64
	better    int
	// compareOnly rows appear only when two configurations are compared.
	compareOnly bool
}

var simRows = []simRow{
	{name: "SLO %", key: "slo_percent", value: func(m sim.Metrics) float64 { return m.SLOPercent }, better: +1},
	{name: "requests", key: "requests", value: func(m sim.Metrics) float64 { return float64(m.Requests) }},
	{name: "served", key: "served", value: func(m sim.Metrics) float64 { return float64(m.Served) }, better: +1},
	{name: "to cloud", key: "to_cloud", value: func(m sim.Metrics) float64 { return float64(m.ToCloud) }, better: -1},
	{name: "failed", key: "failed", value: func(m sim.Metrics) float64 { return float64(m.Failed) }, better: -1},
	{name: "absent alias", key: "absent_alias", value: func(m sim.Metrics) float64 { return float64(m.AbsentAlias) }, better: -1, compareOnly: true},
	{name: "cold waits", key: "cold_waits", value: func(m sim.Metrics) float64 { return float64(m.ColdWaits) }, better: -1},
	{name: "cold wait p95 s", key: "cold_wait_p95_seconds", value: func(m sim.Metrics) float64 { return m.ColdWaitP95Seconds }, better: -1},
	{name: "GB reloaded", key: "gb_reloaded", value: func(m sim.Metrics) float64 { return m.GBReloaded }, better: -1},
	{name: "GB loaded by plans", key: "gb_loaded_by_plans", value: func(m sim.Metrics) float64 { return m.GBLoadedByPlans }, better: -1},
	{name: "interruptions", key: "interruptions", value: func(m sim.Metrics) float64 { return float64(m.Interruptions) }, better: -1},
	{name: "residency changes/h", key: "residency_changes_per_hour", value: func(m sim.Metrics) float64 { return m.ResidencyChangesPerHour }, better: -1},
	{name: "evictions", key: "evictions", value: func(m sim.Metrics) float64 { return float64(m.Evictions) }, better: -1},
	{name: "guard aborts", key: "guard_aborts", value: func(m sim.Metrics) float64 { return float64(m.GuardAborts) }, better: -1},
	{name: "applies", key: "applies", value: func(m sim.Metrics) float64 { return float64(m.Applies) }},
}

// rows are the metrics a report shows.
func rows(compare bool) []simRow {
	var out []simRow
	for _, r := range simRows {
		if compare || !r.compareOnly {
			out = append(out, r)
		}
	}
	return out
}

// format writes a metric's value as the report shows it: SLO with two
// decimals, the others as short as they are.
func (r simRow) format(v float64) string {
	if r.key == "slo_percent" {
		return fmt.Sprintf("%.2f", v)
	}
	return pools.Num(v)
}

// delta is one metric of one mode, head minus base.
type delta struct {
	Mode    sim.Mode `json:"mode"`
	Metric  string   `json:"metric"`
	Base    float64  `json:"base"`
	Head    float64  `json:"head"`
	Delta   float64  `json:"delta"`
	Verdict string   `json:"verdict"`
	row     simRow
}

// verdict judges head against base for a metric: "same" when equal (as
// shown, to two decimals), else "better" or "worse" by the metric's
// direction, or "changed" for a metric that has none.
func verdict(r simRow, base, head float64) string {
	d := head - base
	switch {
	case pools.Num(d) == "0":
		return "same"
	case r.better == 0:
		return "changed"
	case (d > 0) == (r.better > 0):
		return "better"
	}
	return "worse"
}

// deltas pairs each mode's base and head runs, in mode order.
func deltas(runs []simRun) [][]delta {
	base := map[sim.Mode]*sim.Result{}
	var modes []sim.Mode
	for _, r := range runs {
		if r.Config == "base" {
			base[r.Mode] = r.Result
			modes = append(modes, r.Mode)
		}
	}
	var out [][]delta
	for _, m := range modes {
		for _, r := range runs {
			if r.Config != "head" || r.Mode != m {
				continue
			}
			var ds []delta
			for _, row := range rows(true) {
				b, h := row.value(base[m].Metrics), row.value(r.Result.Metrics)
				ds = append(ds, delta{Mode: m, Metric: row.key, Base: b, Head: h, Delta: h - b, Verdict: verdict(row, b, h), row: row})
			}
			out = append(out, ds)
		}
	}
	return out
}

// signed writes a difference with its sign.
func (d delta) signed() string {
	s := d.row.format(d.Delta)
	if d.Delta > 0 && s != "0" && s != "0.00" {
		s = "+" + s
	}
	return s
}

// summary is the verdict line of a mode: which metrics got worse, which
// better.
func summary(ds []delta) string {
	var worse, better []string
	for _, d := range ds {
		switch d.Verdict {
		case "worse":
			worse = append(worse, d.row.name)
		case "better":
			better = append(better, d.row.name)
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

// absentNotes are the "absent" timeline entries of the runs, once per
// configuration: what the scenario names that a configuration lacks.
func absentNotes(runs []simRun) []string {
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

func columnName(r simRun, compare bool) string {
	if compare {
		return r.Config + " " + string(r.Mode)
	}
	return string(r.Mode)
}

func writeSimulation(w io.Writer, format string, sc sim.Scenario, pool string, runs []simRun, compare bool) {
	var ds [][]delta
	if compare {
		ds = deltas(runs)
	}
	switch format {
	case "json":
		var flat []delta
		for _, d := range ds {
			flat = append(flat, d...)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(struct {
			FormatVersion int      `json:"format_version"`
			Scenario      string   `json:"scenario"`
			Pool          string   `json:"pool"`
			Seed          uint64   `json:"seed"`
			Duration      string   `json:"duration"`
			Delta         []delta  `json:"delta,omitempty"`
			Absent        []string `json:"absent,omitempty"`
			Runs          []simRun `json:"runs"`
		}{1, sc.Name, pool, sc.Seed, sc.Duration.String(), flat, absentNotes(runs), runs})
		return
	case "markdown":
		fmt.Fprintf(w, "### poolc simulate: %s on %s\n\nseed %d · %s simulated\n\n", sc.Name, pool, sc.Seed, sc.Duration)
		for _, mode := range ds {
			fmt.Fprintf(w, "**head minus base, mode %s** (%s)\n\n| metric | base | head | delta | verdict |\n|---|---:|---:|---:|---|\n", mode[0].Mode, summary(mode))
			for _, d := range mode {
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", d.row.name, d.row.format(d.Base), d.row.format(d.Head), d.signed(), d.Verdict)
			}
			fmt.Fprintln(w)
		}
		for _, n := range absentNotes(runs) {
			fmt.Fprintf(w, "- %s\n", n)
		}
		if compare {
			fmt.Fprint(w, "\n<details><summary>The runs side by side</summary>\n\n")
		}
		fmt.Fprint(w, "| metric |")
		for _, r := range runs {
			fmt.Fprintf(w, " %s |", columnName(r, compare))
		}
		fmt.Fprint(w, "\n|---|")
		for range runs {
			fmt.Fprint(w, "---:|")
		}
		fmt.Fprintln(w)
		for _, row := range rows(compare) {
			fmt.Fprintf(w, "| %s |", row.name)
			for _, r := range runs {
				fmt.Fprintf(w, " %s |", row.format(row.value(r.Result.Metrics)))
			}
			fmt.Fprintln(w)
		}
		if compare {
			fmt.Fprint(w, "\n</details>\n")
		}
		for _, r := range runs {
			if len(r.Result.Timeline) == 0 {
				continue
			}
			fmt.Fprintf(w, "\n<details><summary>Timeline (%s, %s)</summary>\n\n```\n", columnName(r, compare), plural.Count(len(r.Result.Timeline), "entry"))
			writeTimeline(w, r.Result.Timeline)
			fmt.Fprint(w, "```\n\n</details>\n")
		}
		return
	}
	fmt.Fprintf(w, "Scenario %s on pool %s · seed %d · %s simulated\n", sc.Name, pool, sc.Seed, sc.Duration)
	if sc.Description != "" {
		fmt.Fprintf(w, "%s\n", sc.Description)
	}
	for _, mode := range ds {
		fmt.Fprintf(w, "\nHead minus base, mode %s (%s):\n", mode[0].Mode, summary(mode))
		tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "\tbase\thead\tdelta\tverdict\t\n")
		for _, d := range mode {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", d.row.name, d.row.format(d.Base), d.row.format(d.Head), d.signed(), d.Verdict)
		}
		tw.Flush()
	}
	if notes := absentNotes(runs); len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintf(w, "%s\n", n)
		}
	}
	if compare {
		fmt.Fprint(w, "\nThe runs side by side:\n")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\t")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t", columnName(r, compare))
	}
	fmt.Fprintln(tw)
	for _, row := range rows(compare) {
		fmt.Fprintf(tw, "%s\t", row.name)
		for _, r := range runs {
			fmt.Fprintf(tw, "%s\t", row.format(row.value(r.Result.Metrics)))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, r := range runs {
		if len(r.Result.Timeline) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nTimeline (%s):\n", columnName(r, compare))
		writeTimeline(w, r.Result.Timeline)
	}
}
