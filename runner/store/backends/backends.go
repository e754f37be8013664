// Package backends opens the state backend a pool's state block chooses,
// so that commands need not know which ones exist.
package backends

import (
	"fmt"

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
