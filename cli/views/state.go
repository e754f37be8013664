package views

import (
	"fmt"
	"io"

	"poolc.dev/poolc/compiler/render"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store"
)

// StateJSON is the JSON view of a state: the state file's own JSON.
func StateJSON(w io.Writer, st *pools.State) error {
	data, err := st.Marshal()
	if err == nil {
		_, err = w.Write(data)
	}
	return err
}

// State is the human view of a state: its lineage and serial, its
// canonical text, then what the last refresh read of its lanes'
// processes beside the configured pool's memory (configured is asked
// only when there is a state, and may give nil).
func State(w io.Writer, st *pools.State, configured func() *pools.Pool) {
	if st.Lineage == "" {
		fmt.Fprintln(w, "No state: nothing has been applied to this pool yet ('poolc apply' records what it does).")
		return
	}
	fmt.Fprintf(w, "# pool %s, lineage %s, serial %d\n%s", orDash(st.Pool), orDash(st.Lineage), st.Serial, render.StateText(st.Fleet))
	if obs := render.ObservedText(st.Fleet, configured()); obs != "" {
		fmt.Fprintf(w, "# as the last refresh read them on the nodes\n%s", obs)
	}
}

// StateAddresses is state list: one address a line, for scripts.
func StateAddresses(w io.Writer, addrs []string) {
	for _, a := range addrs {
		fmt.Fprintln(w, a)
	}
}

// Unlocked says force-unlock removed the lock of the state b names.
func Unlocked(w io.Writer, b fmt.Stringer) {
	fmt.Fprintf(w, "Unlocked %s.\n", b)
}

// StateCopied says what state push or pull copied: pool's state, from
// one backend to the other, its lineage and serials.
func StateCopied(w io.Writer, pool string, from, to fmt.Stringer, c *store.Copied) {
	fmt.Fprintf(w, "Copied the state of pool %s from %s (lineage %s, serial %d) to %s (serial %d).\n", pool, from, c.Lineage, c.Serial, to, c.ToSerial)
}
