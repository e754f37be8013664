// Package backends opens the state backend a pool's state block chooses,
// so that commands need not know which ones exist.
package backends

import (
	"fmt"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store"
	"poolc.dev/poolc/runner/store/etcdstore"
)

// Open returns the backend of a pool: the state file at statePath for
// the file backend (the caller resolves it: the state block's path, or
// --state), or the pool's keys in etcd, with TLS files relative to dir.
func Open(pool *pools.Pool, dir, statePath string) (store.Backend, error) {
	switch pool.State.Backend {
	case "", "file":
		return store.Open(statePath), nil
	case "etcd":
		return etcdstore.Open(pool.State, pool.Name, dir)
	}
	return nil, fmt.Errorf("pool %s: unknown state backend %q", pool.Name, pool.State.Backend)
}

// OpenConfig returns the backend of a configuration: the state file
// statePath when one is given (--state), else its state block's. The
// caller closes it.
func OpenConfig(cfg *compiler.Config, statePath string) (store.Backend, error) {
	if statePath != "" {
		return store.Open(statePath), nil
	}
	return Open(cfg.Pool, cfg.Dir(), cfg.StatePath())
}
