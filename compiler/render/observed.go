package render

import (
	"fmt"
	"strconv"
	"strings"

	"poolc.dev/poolc/pools"
)

// ObservedText lists what the last refresh read of each lane's process on
// its node, one line each: "observed LANE@NODE:PORT pid=N rss=SIZE
// cmd=WORDS", the words of its own command line quoted where they hold a
// space or a quote. With the configured pool (nil without one), the
// memory of the lane's model is set beside its rss: "declared=GB" when
// memory_gb is written, "estimated=GB" when its GGUF header was read.
// Lanes without an observation are left out; "" when none has one.
func ObservedText(f pools.Fleet, p *pools.Pool) string {
	var b strings.Builder
	for _, l := range f.Lanes {
		o := l.Observed
		if o == nil {
			continue
		}
		rss := "unknown"
		if o.ResidentBytes > 0 {
			rss = pools.Bytes(o.ResidentBytes)
		}
		words := make([]string, len(o.CommandLine))
		for i, w := range o.CommandLine {
			if w == "" || strings.ContainsAny(w, " \t\n\"'\\") {
				w = strconv.Quote(w)
			}
			words[i] = w
		}
		fmt.Fprintf(&b, "observed %s@%s:%d pid=%d rss=%s%s cmd=%s\n", l.Name, l.Node, l.Port, o.PID, rss, modelMemory(p, l.Model), strings.Join(words, " "))
	}
	return b.String()
}

// modelMemory is the declared and estimated memory of a model of the pool,
// as ObservedText sets them beside a process's rss: "" without a pool or
// with a model it does not hold.
func modelMemory(p *pools.Pool, model string) string {
	if p == nil {
		return ""
	}
	m := p.Model(model)
	if m == nil {
		return ""
	}
	var s string
	if m.Declared {
		s += " declared=" + pools.GB(m.MemoryGB)
	}
	if m.Estimate != nil {
		s += " estimated=" + pools.GB(m.Estimate.GB)
	}
	return s
}
