package views

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"poolc.dev/poolc/orchestrate"
)

// PodsSkipped says, on standard error, why pods run passed members by
// (a line each).
func PodsSkipped(errw io.Writer, reasons []string) {
	Failure(errw, "pods run", strings.Join(reasons, "\npoolc pods run: "))
}

// Placed is the line of pods run for a Job placed, on standard output
// for scripts: its member's context, namespace and name, the members
// that were full, and how long it waited.
func Placed(w io.Writer, placed orchestrate.Placed) {
	refused := strings.Join(placed.Refused, ",")
	if refused == "" {
		refused = "-"
	}
	fmt.Fprintf(w, "placed context=%s namespace=%s job=%s refused=%s waited=%s\n",
		placed.Context, placed.Namespace, placed.Job, refused, placed.Waited.Round(time.Millisecond))
}

// PodsStatusJSON is the JSON view of pods status: one document holding
// the members.
func PodsStatusJSON(w io.Writer, rows []orchestrate.MemberStatus) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"members": rows})
}

// PodsStatus is the human view of pods status: a table, a member that
// could not be read with why.
func PodsStatus(w io.Writer, rows []orchestrate.MemberStatus) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tCONTEXT\tNAMESPACE\tUSED\tCAPACITY")
	for _, r := range rows {
		used := fmt.Sprint(r.Used)
		if !r.Counted {
			used = "?"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%d", r.Pool, r.Context, r.Namespace, used, r.Capacity)
		if r.Error != "" {
			line = fmt.Sprintf("%s\t%s\t%s\t-\t-\t%s", r.Pool, r.Context, r.Namespace, r.Error)
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}
