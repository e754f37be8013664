package views

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"poolc.dev/poolc/membership"
	"poolc.dev/poolc/pools"
)

// NodeToken shows a token issued for node: the token alone on standard
// output (for a script to capture), what it is for on standard error.
func NodeToken(out, errw io.Writer, node, token string, expires time.Time) {
	fmt.Fprintln(out, token)
	fmt.Fprintf(errw, "Token for node %s, single use, valid until %s. It is not shown again.\n", node, expires.Format(time.RFC3339))
}

// NodeEnrolled says that node joined pool, where its credential is, and
// what to run next.
func NodeEnrolled(out io.Writer, node, pool, credentialFile string) {
	fmt.Fprintf(out, "Enrolled node %s in pool %s; its credential is in %s. Run poolc node agent on it.\n", node, pool, credentialFile)
}

// NodeUp says, on standard error, that a node's agent holds its lease:
// how long it lives past a heartbeat and how often the agent reports.
func NodeUp(errw io.Writer, node string, leaseTTLSeconds int, every time.Duration) {
	fmt.Fprintf(errw, "Node %s is up: its lease lives %ds past each heartbeat; reporting every %v.\n", node, leaseTTLSeconds, every)
}

// NodeCordon says node's cordon is now c ("-" for none).
func NodeCordon(out io.Writer, node string, c pools.Cordon) {
	fmt.Fprintf(out, "Node %s: %s. Run poolc plan to see what moves.\n", node, orDash(string(c)))
}

// NodeLeft says node left the pool's membership.
func NodeLeft(out io.Writer, node string) {
	fmt.Fprintf(out, "Node %s left the pool.\n", node)
}

// MembersJSON is the JSON view of node list: an array of the enrolled
// nodes.
func MembersJSON(w io.Writer, ms []membership.Member) error {
	type row struct {
		Name   string             `json:"name"`
		Up     bool               `json:"up"`
		Cordon pools.Cordon       `json:"cordon,omitempty"`
		Report *membership.Report `json:"report,omitempty"`
	}
	rows := []row{}
	for _, m := range ms {
		rows = append(rows, row{m.Name, m.Live, m.Cordon, m.Report})
	}
	data, _ := json.MarshalIndent(rows, "", "  ")
	_, err := w.Write(append(data, '\n'))
	return err
}

// Members is the human view of node list: a table, the age of each
// report as of now.
func Members(w io.Writer, ms []membership.Member, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATUS\tCORDON\tMEMORY\tFREE\tLLAMA\tREPORTED")
	for _, m := range ms {
		status, mem, free, llama, age := "down", "-", "-", "-", "-"
		if m.Live {
			status = "up"
			mem, free = pools.GB(m.Report.MemoryTotalGB), pools.GB(m.Report.MemoryFreeGB)
			llama = fmt.Sprint(len(m.Report.LlamaServers))
			age = now.Sub(m.Report.Time).Round(time.Second).String() + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, status, orDash(string(m.Cordon)), mem, free, llama, age)
	}
	return tw.Flush()
}
