// Package deadaddr gives tests a loopback address where nothing listens,
// for checking what a client reports when a server refuses it.
package deadaddr

import (
	"net"
	"testing"
)

// TCP returns 127.0.0.1:PORT for a port that was free a moment ago and
// is closed now, so a connection to it is refused.
func TCP(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
