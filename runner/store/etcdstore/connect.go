package etcdstore

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"poolc.dev/poolc/pools"
)

// The environment variables etcd credentials come from: a pool file is
// reviewed and committed, so it never holds a password.
const (
	// UsernameEnv is the environment variable holding the etcd user name.
	UsernameEnv = "POOLC_ETCD_USERNAME"
	// PasswordEnv is the environment variable holding the etcd password.
	PasswordEnv = "POOLC_ETCD_PASSWORD"
)

// Prefix is the key prefix of a pool's state block: its prefix, or
// "/poolc/POOL/".
func Prefix(sb pools.StateBackend, pool string) string {
	p := sb.Prefix
	if p == "" {
		p = "/poolc/" + pool + "/"
	}
	if p[len(p)-1] != '/' {
		p += "/"
	}
	return p
}

// TTL is the lease life, in seconds, of a state block.
func TTL(sb pools.StateBackend) int {
	if sb.LeaseTTLSeconds > 0 {
		return sb.LeaseTTLSeconds
	}
	return DefaultLeaseTTL
}

// Connect opens a client to the etcd a state block names: its endpoints,
// its TLS files (relative to dir), and the credentials in UsernameEnv and
// PasswordEnv when set.
func Connect(sb pools.StateBackend, dir string) (*clientv3.Client, error) {
	if len(sb.Endpoints) == 0 {
		return nil, errors.New(`state backend "etcd" needs endpoints: add endpoints = ["host:2379", ...] to the state block`)
	}
	cfg := clientv3.Config{
		Endpoints:   sb.Endpoints,
		DialTimeout: 5 * time.Second,
		Username:    os.Getenv(UsernameEnv),
		Password:    os.Getenv(PasswordEnv),
		Logger:      zap.NewNop(),
	}
	if (cfg.Username == "") != (cfg.Password == "") {
		return nil, fmt.Errorf("set both %s and %s, or neither", UsernameEnv, PasswordEnv)
	}
	if t := sb.TLS; t != (pools.StateTLS{}) {
		tc, err := tlsConfig(t, dir)
		if err != nil {
			return nil, err
		}
		cfg.TLS = tc
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd %v: %w", sb.Endpoints, err)
	}
	return cli, nil
}

func tlsConfig(t pools.StateTLS, dir string) (*tls.Config, error) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	if (t.Cert == "") != (t.Key == "") {
		return nil, errors.New("state tls: cert and key go together")
	}
	info := transport.TLSInfo{TrustedCAFile: abs(t.CA), CertFile: abs(t.Cert), KeyFile: abs(t.Key)}
	tc, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("state tls: %w", err)
	}
	return tc, nil
}

// Open connects to the etcd of a pool's state block and returns the
// pool's store; Close closes the connection.
func Open(sb pools.StateBackend, pool, dir string) (*Store, error) {
	cli, err := Connect(sb, dir)
	if err != nil {
		return nil, err
	}
	s := New(cli, Prefix(sb, pool), TTL(sb))
	s.ownsConn = true
	return s, nil
}
