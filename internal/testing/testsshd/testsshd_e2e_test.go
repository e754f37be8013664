//go:build e2e

package testsshd

import (
	"context"
	"net"
	"testing"
	"time"

	"poolc.dev/poolc/internal/sshx"
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
	s.Restart(t)
	if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err != nil {
		t.Fatalf("sshd not listening after Restart: %v", err)
	} else {
		c.Close()
	}
}

func TestE2EOnAnotherLoopbackAddress(t *testing.T) {
	srv := Start(t, OnAddress("127.0.0.3"))
	if srv.Host != "127.0.0.3" {
		t.Fatalf("host %s", srv.Host)
	}
	pool, err := sshx.NewPool(srv.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	out, err := pool.Client(srv.Endpoint()).Run(context.Background(), []string{"echo", "ok"}, nil)
	if err != nil || string(out.Stdout) != "ok\n" {
		t.Fatalf("%q %v", out.Stdout, err)
	}
}
