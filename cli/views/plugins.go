package views

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// PluginRow is one plugin poolc plugins lists: its name, what poolc did
// with it (declared and pinned, a built-in default, found and not
// declared, ...), and what it said of itself. An empty field shows as
// "-".
type PluginRow struct {
	Name, Status, Version string
	// Kinds are the step kinds it handles: "all", or a comma-separated
	// list.
	Kinds string
	// Serves names its targets.
	Serves         string
	Binary, SHA256 string
}

// Plugins is the human view of poolc plugins: a table.
func Plugins(w io.Writer, rows []PluginRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tVERSION\tSTEP KINDS\tSERVES\tBINARY\tSHA256")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Status, orDash(r.Version), orDash(r.Kinds), orDash(r.Serves), orDash(r.Binary), orDash(r.SHA256))
	}
	tw.Flush()
}
