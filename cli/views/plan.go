package views

import (
	"io"

	"poolc.dev/poolc/compiler/render"
	"poolc.dev/poolc/pools"
)

// Plan shows a plan in format: text (colored when color), markdown, or
// json, the document stamped with poolc's version.
func Plan(w io.Writer, p *pools.Plan, format string, color bool, version string) error {
	switch format {
	case "json":
		return render.JSON(w, p, version)
	case "markdown":
		render.Markdown(w, p)
		return nil
	}
	render.Text(w, p, render.TextOptions{Color: color})
	return nil
}

// Memory ends a text or markdown plan with each node's budget, declared
// and estimated memory and headroom under the plan's placement, when any
// model of pool has an estimate; the JSON plan holds no such table.
func Memory(w io.Writer, pool *pools.Pool, p *pools.Plan, format string) {
	if format == "json" || !render.HasEstimates(pool) {
		return
	}
	rows := render.Memory(pool, p.After)
	if format == "markdown" {
		render.MemoryMarkdown(w, rows)
		return
	}
	render.MemoryText(w, rows)
}
