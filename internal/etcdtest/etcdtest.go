// Package etcdtest runs real etcd members in the test process
// (go.etcd.io/etcd/server/v3/embed) on loopback ports: one member for unit
// tests, three for fault tests that stop and restart members.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Cluster is a set of embedded etcd members.
type Cluster struct {
	t       testing.TB
	mu      sync.Mutex
	members []*member
}

type member struct {
	name           string
	dir            string
	client, peer   url.URL
	initial, token string
	etcd           *embed.Etcd // nil while stopped; guarded by Cluster.mu
}

// Start runs an n-member cluster for the test and stops it when the test
// ends.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	base := t.TempDir()
	var initial []string
	for i := range n {
		m := &member{name: fmt.Sprintf("m%d", i), dir: filepath.Join(base, fmt.Sprintf("m%d", i))}
		m.client = url.URL{Scheme: "http", Host: freePort(t)}
		m.peer = url.URL{Scheme: "http", Host: freePort(t)}
		initial = append(initial, m.name+"="+m.peer.String())
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		m.initial, m.token = strings.Join(initial, ","), fmt.Sprintf("poolc-test-%d", time.Now().UnixNano())
	}
	// Members of a new cluster wait for each other: start them together.
	errs := make(chan error, n)
	for i := range c.members {
		go func() { errs <- c.startMember(i) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(c.stopAll)
	return c
}

func freePort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (c *Cluster) startMember(i int) error {
	m := c.members[i]
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenClientUrls = []url.URL{m.client}
	cfg.AdvertiseClientUrls = []url.URL{m.client}
	cfg.ListenPeerUrls = []url.URL{m.peer}
	cfg.AdvertisePeerUrls = []url.URL{m.peer}
	cfg.InitialCluster = m.initial
	cfg.InitialClusterToken = m.token
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("etcd member %s: %w", m.name, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return fmt.Errorf("etcd member %s not ready after 30s", m.name)
	}
	c.mu.Lock()
	m.etcd = e
	c.mu.Unlock()
	return nil
}

// Endpoints are the members' client addresses, host:port.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.client.Host)
	}
	return out
}

// Client returns a client of every member, closed when the test ends.
func (c *Cluster) Client() *clientv3.Client {
	c.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

// Stop stops member i, as a crash of its machine would (its data stays).
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	e := c.members[i].etcd
	c.members[i].etcd = nil
	c.mu.Unlock()
	if e != nil {
		e.Close()
	}
}

// Restart starts member i again from its data, without waiting for the
// others: a restarted member of a cluster without quorum becomes ready
// only once enough members are back, so Restart returns at once and
// reports a failure through the test.
func (c *Cluster) Restart(i int) {
	go func() {
		if err := c.startMember(i); err != nil {
			c.t.Errorf("restarting: %v", err)
		}
	}()
}

func (c *Cluster) stopAll() {
	for i := range c.members {
		c.Stop(i)
	}
}
