package views

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/sim"
)

func columnName(r sim.Outcome, compare bool) string {
	if compare {
		return r.Config + " " + string(r.Mode)
	}
	return string(r.Mode)
}

// Simulation shows a simulation report in format: text, json or
// markdown. compare says the runs are of two configurations, head and
// base, and leads with head minus base.
func Simulation(w io.Writer, format string, sc sim.Scenario, pool string, runs []sim.Outcome, compare bool) {
	var ds [][]sim.Delta
	if compare {
		ds = sim.Compare(runs)
	}
	switch format {
	case "json":
		simulationJSON(w, sc, pool, runs, ds)
	case "markdown":
		simulationMarkdown(w, sc, pool, runs, ds, compare)
	default:
		simulationText(w, sc, pool, runs, ds, compare)
	}
}

// simulationJSON is the JSON view of a simulation: one document.
func simulationJSON(w io.Writer, sc sim.Scenario, pool string, runs []sim.Outcome, ds [][]sim.Delta) {
	var flat []sim.Delta
	for _, d := range ds {
		flat = append(flat, d...)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(struct {
		FormatVersion int           `json:"format_version"`
		Scenario      string        `json:"scenario"`
		Pool          string        `json:"pool"`
		Seed          uint64        `json:"seed"`
		Duration      string        `json:"duration"`
		Delta         []sim.Delta   `json:"delta,omitempty"`
		Absent        []string      `json:"absent,omitempty"`
		Runs          []sim.Outcome `json:"runs"`
	}{1, sc.Name, pool, sc.Seed, sc.Duration.String(), flat, sim.AbsentNotes(runs), runs})
}

// simulationMarkdown is the view of a simulation for a pull-request
// comment: tables, the runs and timelines folded.
func simulationMarkdown(w io.Writer, sc sim.Scenario, pool string, runs []sim.Outcome, ds [][]sim.Delta, compare bool) {
	fmt.Fprintf(w, "### poolc simulate: %s on %s\n\nseed %d · %s simulated\n\n", sc.Name, pool, sc.Seed, sc.Duration)
	for _, mode := range ds {
		fmt.Fprintf(w, "**head minus base, mode %s** (%s)\n\n| metric | base | head | delta | verdict |\n|---|---:|---:|---:|---|\n", mode[0].Mode, sim.Verdicts(mode))
		for _, d := range mode {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", d.Of().Name, d.Of().Format(d.Base), d.Of().Format(d.Head), d.Signed(), d.Verdict)
		}
		fmt.Fprintln(w)
	}
	for _, n := range sim.AbsentNotes(runs) {
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
	writeMetrics(w, runs, compare, "| %s |", " %s |")
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
}

// simulationText is the human view of a simulation: aligned tables and
// the timelines.
func simulationText(w io.Writer, sc sim.Scenario, pool string, runs []sim.Outcome, ds [][]sim.Delta, compare bool) {
	fmt.Fprintf(w, "Scenario %s on pool %s · seed %d · %s simulated\n", sc.Name, pool, sc.Seed, sc.Duration)
	if sc.Description != "" {
		fmt.Fprintf(w, "%s\n", sc.Description)
	}
	for _, mode := range ds {
		fmt.Fprintf(w, "\nHead minus base, mode %s (%s):\n", mode[0].Mode, sim.Verdicts(mode))
		tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "\tbase\thead\tdelta\tverdict\t\n")
		for _, d := range mode {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", d.Of().Name, d.Of().Format(d.Base), d.Of().Format(d.Head), d.Signed(), d.Verdict)
		}
		tw.Flush()
	}
	if notes := sim.AbsentNotes(runs); len(notes) > 0 {
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
	writeMetrics(tw, runs, compare, "%s\t", "%s\t")
	tw.Flush()
	for _, r := range runs {
		if len(r.Result.Timeline) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nTimeline (%s):\n", columnName(r, compare))
		writeTimeline(w, r.Result.Timeline)
	}
}

// SimulationProgress rewrites one line on a terminal with the progress of
// a simulation run (label) of total simulated time.
func SimulationProgress(w io.Writer, label string, total time.Duration) func(done, total time.Duration) {
	last := time.Time{}
	return func(done, _ time.Duration) {
		if time.Since(last) < 100*time.Millisecond {
			return
		}
		last = time.Now()
		fmt.Fprintf(w, "\r\033[K%s: %s of %s simulated (%.0f%%)", label, done.Truncate(time.Second), total, 100*done.Seconds()/total.Seconds())
	}
}

// writeMetrics writes a line per metric of the report: its name, then
// its value in each run, with the formats name and cell.
func writeMetrics(w io.Writer, runs []sim.Outcome, compare bool, name, cell string) {
	for _, row := range sim.ReportMetrics(compare) {
		fmt.Fprintf(w, name, row.Name)
		for _, r := range runs {
			fmt.Fprintf(w, cell, row.Format(row.Value(r.Result.Metrics)))
		}
		fmt.Fprintln(w)
	}
}

// writeTimeline lists the controller's actions, at their virtual times.
func writeTimeline(w io.Writer, tl []sim.Action) {
	for _, a := range tl {
		d := a.At.Truncate(time.Second)
		fmt.Fprintf(w, "  %02d:%02d:%02d  %-14s %s\n", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60, a.Kind, a.Detail)
	}
}

// SimulationProgressDone clears the progress line SimulationProgress
// wrote, once its run ended.
func SimulationProgressDone(w io.Writer) {
	fmt.Fprint(w, "\r\033[K")
}

// ScenarioRow is a reference scenario simulate --list shows.
type ScenarioRow struct {
	Name        string
	Duration    time.Duration
	Description string
}

// Scenarios is simulate --list: the reference scenarios, one a line,
// with how long each runs and what it does.
func Scenarios(w io.Writer, rows []ScenarioRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Duration, r.Description)
	}
	tw.Flush()
}

// ScenarioSource is simulate --print: a reference scenario's file as
// written.
func ScenarioSource(w io.Writer, src []byte) {
	w.Write(src)
}

// ReferenceScenarioRefused follows, on standard error, the mistakes
// found in reference scenario name: its file is embedded, so it says how
// to get a copy to adapt.
func ReferenceScenarioRefused(errw io.Writer, name, file string) {
	fmt.Fprintf(errw, "(%s is a reference scenario, written for examples/spark-lab: 'poolc simulate --print %s > %s' writes a copy to adapt)\n", name, name, file)
}
