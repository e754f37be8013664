package render

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"

	"poolc.dev/poolc/pools"
)

// StateText is the canonical text of a fleet: one line per node, lane
// process, route, weights file and pod-pool member, in a fixed order, so
// two fleets differ in text exactly where they differ in substance.
func StateText(f pools.Fleet) string {
	// Written piece by piece, not through fmt: a fleet has a line per
	// lane, and formatting each was a fifth of rendering a plan.
	var b strings.Builder
	for _, n := range f.Nodes {
		b.WriteString("node " + n.Name)
		if n.Down {
			b.WriteString(" down")
		}
		if n.Cordon != "" {
			b.WriteString(" " + string(n.Cordon))
		}
		b.WriteByte('\n')
	}
	for _, l := range f.Lanes {
		state := "registered"
		if l.Loaded {
			state = "loaded"
		}
		b.WriteString("lane " + l.Name + "@" + l.Node + " model=" + l.Model + " port=")
		b.WriteString(strconv.Itoa(l.Port))
		b.WriteString(" " + string(l.Residency) + " " + pools.GB(l.MemoryGB) + " " + state)
		if l.SHA256 != "" {
			b.WriteString(" sha256=" + pools.ShortDigest(l.SHA256))
		}
		if len(l.Args) > 0 {
			b.WriteString(" args=" + strconv.Quote(strings.Join(l.Args, " ")))
		}
		b.WriteByte('\n')
	}
	for _, r := range f.Routes {
		b.WriteString("route " + r.Alias + " -> " + routeText(r) + "\n")
	}
	for _, p := range f.Prefetched {
		b.WriteString("weights " + p.Model + "@" + p.Node + " " + pools.GB(p.SizeGB) + " " + p.Path)
		if p.SHA256 != "" {
			b.WriteString(" sha256=" + pools.ShortDigest(p.SHA256))
		}
		b.WriteByte('\n')
	}
	for _, m := range f.Members {
		fmt.Fprintf(&b, "member %s priority=%d capacity=%d", m.Key(), m.Priority, m.Capacity)
		if m.SSHHost != "" {
			fmt.Fprintf(&b, " ssh=%s", m.SSHHost)
		}
		if m.Registry != "" {
			fmt.Fprintf(&b, " registry=%s", m.Registry)
		}
		if m.Image != "" {
			fmt.Fprintf(&b, " image=%s", m.Image)
		}
		if m.PodMemoryGB != 0 {
			fmt.Fprintf(&b, " pod_memory=%s", pools.GB(m.PodMemoryGB))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// routeText names where a route goes: LANE@NODE, with " via router" when
// it reaches the lane as a model of its node's router.
func routeText(r pools.Route) string {
	if r.Node == "" {
		return r.Lane
	}
	return r.Lane + "@" + r.Node + viaRouter(r)
}

func viaRouter(r pools.Route) string {
	if r.Router {
		return " via router"
	}
	return ""
}

// UnifiedDiff returns a unified diff of two texts with three lines of
// context, headed "--- from" and "+++ to", or "" when they are equal.
func UnifiedDiff(from, to, a, b string) string {
	if a == b {
		return ""
	}
	diffs := lineDiff(a, b)

	type line struct {
		op   byte // ' ', '-', '+'
		text string
	}
	var all []line
	for _, d := range diffs {
		op := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = '-'
		case diffmatchpatch.DiffInsert:
			op = '+'
		}
		for _, t := range strings.SplitAfter(d.Text, "\n") {
			if t != "" {
				all = append(all, line{op, strings.TrimSuffix(t, "\n")})
			}
		}
	}
	const context = 3
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	aLine, bLine := 1, 1 // line numbers at all[i]
	for i := 0; i < len(all); {
		if all[i].op == ' ' {
			aLine++
			bLine++
			i++
			continue
		}
		// A hunk: back up to context lines before the change, then extend
		// while changes are less than 2*context lines apart.
		start := max(0, i-context)
		for j := start; j < i; j++ {
			aLine--
			bLine--
		}
		end := i
		for end < len(all) {
			if all[end].op != ' ' {
				end++
				continue
			}
			run := end
			for run < len(all) && all[run].op == ' ' {
				run++
			}
			if run == len(all) || run-end > 2*context {
				end = min(len(all), end+context)
				break
			}
			end = run
		}
		aCount, bCount := 0, 0
		for _, l := range all[start:end] {
			if l.op != '+' {
				aCount++
			}
			if l.op != '-' {
				bCount++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aLine, aCount), hunkRange(bLine, bCount))
		for _, l := range all[start:end] {
			out.WriteByte(l.op)
			out.WriteString(l.text)
			out.WriteByte('\n')
		}
		aLine += aCount
		bLine += bCount
		i = end
	}
	return out.String()
}

// lineDiff is the line-wise diff of a and b. A plan from an empty state
// (or to an empty fleet) compares against nothing: every line is added
// (or removed), which is what the diff would find, without its indexing
// of every line.
func lineDiff(a, b string) []diffmatchpatch.Diff {
	switch {
	case a == "":
		return []diffmatchpatch.Diff{{Type: diffmatchpatch.DiffInsert, Text: b}}
	case b == "":
		return []diffmatchpatch.Diff{{Type: diffmatchpatch.DiffDelete, Text: a}}
	}
	dmp := diffmatchpatch.New()
	ca, cb, lines := dmp.DiffLinesToChars(a, b)
	return dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lines)
}

// hunkRange writes a hunk's start,count as unified diffs do: an empty
// range starts one line before.
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprintf("%d", start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}
