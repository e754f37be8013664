// Package etcdlocal runs an etcd member inside the calling process
// (go.etcd.io/etcd/server/v3/embed): the single member of poolc etcd
// serve, which cmd/poolc-etcd runs for trying the etcd backend, and the
// members of the test clusters in internal/testing/etcdtest.
package etcdlocal

import (
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Member is one member of a cluster, by its addresses.
type Member struct {
	// Name names the member in InitialCluster; Dir holds its data.
	Name, Dir string
	// Client is where clients reach it, Peer where the other members do.
	Client, Peer url.URL
	// InitialCluster lists every member as NAME=PEER-URL, comma separated;
	// Token is the cluster's, the same for all its members.
	InitialCluster, Token string
}

// Start starts the member and waits until it serves, at most ready; a
// member of a new cluster serves once a majority of its members started.
// Its own log is discarded: poolc reports what etcd answers.
func (m Member) Start(ready time.Duration) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = m.Name
	cfg.Dir = m.Dir
	cfg.ListenClientUrls = []url.URL{m.Client}
	cfg.AdvertiseClientUrls = []url.URL{m.Client}
	cfg.ListenPeerUrls = []url.URL{m.Peer}
	cfg.AdvertisePeerUrls = []url.URL{m.Peer}
	cfg.InitialCluster = m.InitialCluster
	cfg.InitialClusterToken = m.Token
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd member %s: %w", m.Name, err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case <-time.After(ready):
		e.Close()
		return nil, fmt.Errorf("etcd member %s not ready after %v", m.Name, ready)
	}
}
