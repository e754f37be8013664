//go:build e2e

package testsshd

import (
	"net"
	"testing"
	"time"
)

func TestE2EStartStop(t *testing.T) {
	s := Start(t)
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		t.Fatalf("sshd not listening: %v", err)
	}
	c.Close()
	s.Stop()
	if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		c.Close()
		t.Error("sshd still listening after Stop")
	}
	s.Stop()
}
