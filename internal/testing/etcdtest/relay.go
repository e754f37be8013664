package etcdtest

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Severable is a client of the cluster whose network the test can cut, as
// a SIGKILL of its process or the loss of its machine would: after Sever
// nothing it sends reaches etcd, so code that still runs in the client's
// process (a deferred revoke, an unlock) has no effect. Closing a client
// is not that: a revoke racing the close can still get through.
type Severable struct {
	*clientv3.Client
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

// SeverableClient returns a client that reaches the cluster's first member
// through a loopback relay; the relay and the client end with the test.
func (c *Cluster) SeverableClient(t testing.TB) *Severable {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Severable{ln: ln}
	go s.relay(c.Endpoints()[0])
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ln.Addr().String()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	s.Client = cli
	t.Cleanup(func() {
		s.Sever()
		cli.Close()
	})
	return s
}

// Sever cuts the client off: open connections are closed and new ones are
// refused.
func (s *Severable) Sever() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cut = true
	s.ln.Close()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

func (s *Severable) relay(target string) {
	for {
		in, err := s.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", target)
		if err != nil {
			in.Close()
			continue
		}
		s.mu.Lock()
		if s.cut {
			s.mu.Unlock()
			in.Close()
			out.Close()
			return
		}
		s.conns = append(s.conns, in, out)
		s.mu.Unlock()
		go pipe(in, out)
		go pipe(out, in)
	}
}

// pipe copies src to dst until either ends, then closes both.
func pipe(dst, src net.Conn) {
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}
