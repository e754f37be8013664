// Package etcdtest runs real etcd members in the test process
// (go.etcd.io/etcd/server/v3/embed) on loopback ports: one member for unit
// tests, three for fault tests that stop and restart members.
package etcdtest

import (
	"errors"
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

	"poolc.dev/poolc/internal/etcdlocal"
)

// Cluster is a set of embedded etcd members.
type Cluster struct {
	mu      sync.Mutex
	members []*member
	// restartErr receives the failure of a Restart, for Wait.
	restartErr chan error
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
	c, err := Launch(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Launch runs an n-member cluster keeping its data under dir, for
// harnesses that are not a testing.TB (testscript); Close stops it.
//
// Ports are chosen free and then handed to etcd, so another process may
// take one in between (seen when several test packages start clusters at
// once); a start that fails so is tried again on new ports, a few times.
func Launch(dir string, n int) (*Cluster, error) {
	const attempts = 5
	for attempt := 1; ; attempt++ {
		c, err := launch(filepath.Join(dir, fmt.Sprintf("try%d", attempt)), n)
		if err == nil || attempt == attempts || !strings.Contains(err.Error(), "address already in use") {
			return c, err
		}
	}
}

func launch(dir string, n int) (*Cluster, error) {
	c := &Cluster{restartErr: make(chan error, n)}
	var initial []string
	for i := range n {
		m := &member{name: fmt.Sprintf("m%d", i), dir: filepath.Join(dir, fmt.Sprintf("m%d", i))}
		client, err := freePort()
		if err != nil {
			return nil, err
		}
		peer, err := freePort()
		if err != nil {
			return nil, err
		}
		m.client, m.peer = url.URL{Scheme: "http", Host: client}, url.URL{Scheme: "http", Host: peer}
		initial = append(initial, m.name+"="+m.peer.String())
		c.members = append(c.members, m)
	}
	token := fmt.Sprintf("poolc-test-%d", time.Now().UnixNano()) // one for the whole cluster
	for _, m := range c.members {
		m.initial, m.token = strings.Join(initial, ","), token
	}
	// Members of a new cluster wait for each other: start them together.
	errs := make(chan error, n)
	for i := range c.members {
		go func() { errs <- c.startMember(i) }()
	}
	var err error
	for range n {
		err = errors.Join(err, <-errs)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (c *Cluster) startMember(i int) error {
	m := c.members[i]
	e, err := etcdlocal.Member{Name: m.name, Dir: m.dir, Client: m.client, Peer: m.peer, InitialCluster: m.initial, Token: m.token}.Start(30 * time.Second)
	if err != nil {
		return err
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
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Stop stops member i, as a crash of its machine would (its data stays).
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	e := c.members[i].etcd
	c.members[i].etcd = nil
	c.mu.Unlock()
	if e != nil {
		e.Server.HardStop() // out of the cluster at once, as a crash would take it
		e.Close()
	}
}

// Restart starts member i again from its data, without waiting for the
// others: a restarted member of a cluster without quorum becomes ready
// only once enough members are back, so Restart returns at once; Wait
// reports how it went.
func (c *Cluster) Restart(i int) {
	go func() { c.restartErr <- c.startMember(i) }()
}

// Wait waits for the member a Restart started to be ready, or failed.
func (c *Cluster) Wait() error { return <-c.restartErr }

// Close stops every member.
func (c *Cluster) Close() {
	for i := range c.members {
		c.Stop(i)
	}
}

// Leader is the index of the member that leads the cluster, or -1 when
// no running member knows one.
func (c *Cluster) Leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.members {
		if m.etcd != nil && m.etcd.Server.Leader() == m.etcd.Server.MemberID() {
			return i
		}
	}
	return -1
}
