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
// space or a quote. Lanes without an observation are left out; "" when
// none has one.
func ObservedText(f pools.Fleet) string {
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
		fmt.Fprintf(&b, "observed %s@%s:%d pid=%d rss=%s cmd=%s\n", l.Name, l.Node, l.Port, o.PID, rss, strings.Join(words, " "))
	}
	return b.String()
}
