package cli

import (
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// handedOut holds the ports freeportsCmd gave to a script of this test
// process, so scripts run in parallel never share one.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// freeportsCmd is the script command freeports NAME...: it sets each
// environment variable NAME to a loopback port nothing listens on whose
// next port is free too (where a replaced lane's second process
// listens), none of them given to another script of this process.
// Scripts that start real processes take their ports from it, never
// from a number written in the script, which a script run beside it
// (or its replacement ports) may hold.
func freeportsCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: freeports NAME...")
	}
	for _, name := range args {
		port, err := freePortPair()
		ts.Check(err)
		ts.Setenv(name, strconv.Itoa(port))
	}
}

// freePortPair returns a loopback port p, free with p+1, that it has not
// returned before.
func freePortPair() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		next, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+1)))
		l.Close()
		if err != nil {
			continue
		}
		next.Close()
		if handedOut.ports[p] || handedOut.ports[p+1] {
			continue
		}
		handedOut.ports[p], handedOut.ports[p+1] = true, true
		return p, nil
	}
	return 0, fmt.Errorf("no free pair of loopback ports in 100 tries")
}
