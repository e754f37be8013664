package poolctest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// NodePool is a pool of two nodes whose state and membership live in the
// etcd at $ETCD, with leases of three seconds; its one lane prefers a.
const NodePool = `pool "lab" {
  state {
    backend   = "etcd"
    endpoints = ["$ETCD"]
    prefix    = "/nodes/"
    lease_ttl = 3
  }
  node "a" {
    address   = "a.lan"
    memory_gb = 64
  }
  node "b" {
    address   = "b.lan"
    memory_gb = 64
  }
  model "chat-model" {
    path      = "/models/chat.gguf"
    size_gb   = 10
    memory_gb = 30
  }
  lane "chat" {
    model     = "chat-model"
    residency = "keep-warm"
    placement = ["a", "b"]
    port      = 8080
  }
  alias "chat" {
    lane      = "chat"
    fallbacks = ["cloud"]
  }
  plugin "sim" {
    builtin = true
  }
}
`

// WriteNodePool writes NodePool, its state in the etcd at endpoint, as
// pool.hcl into a new directory pool under dir, and returns the pool's
// directory.
func WriteNodePool(t testing.TB, dir, endpoint string) string {
	t.Helper()
	pool := filepath.Join(dir, "pool")
	if err := os.Mkdir(pool, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pool, "pool.hcl"), []byte(strings.Replace(NodePool, "$ETCD", endpoint, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return pool
}

// EtcdSparkLab writes the example pool into dir as SparkLab does, with
// its state in etcd under prefix and locks on leases of ttl seconds.
func EtcdSparkLab(t testing.TB, dir string, timeScale float64, endpoints []string, prefix string, ttl int) string {
	t.Helper()
	SparkLab(t, dir, timeScale)
	path := filepath.Join(dir, "spark-lab.hcl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	quoted := make([]string, len(endpoints))
	for i, e := range endpoints {
		quoted[i] = fmt.Sprintf("%q", e)
	}
	block := fmt.Sprintf("  state {\n    backend   = \"etcd\"\n    endpoints = [%s]\n    prefix    = %q\n    lease_ttl = %d\n  }", strings.Join(quoted, ", "), prefix, ttl)
	cfg := strings.Replace(string(src), "  state {\n    backend = \"file\"\n    path    = \"poolc.state.json\"\n  }", block, 1)
	if cfg == string(src) {
		t.Fatal("the example's state block changed; update poolctest.EtcdSparkLab")
	}
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// LeaseEnd is when a lease lapsed, as bounds: etcd says a lease's
// remaining life in whole seconds, rounded down, so the moment the figure
// drops below one second, one second before the lease lapses, is known to
// within two polls.
type LeaseEnd struct {
	// Earliest and Latest bound the instant the lease lapsed.
	Earliest, Latest time.Time
	// Err says why the end is not known.
	Err error
}

// WatchLeaseEnd polls the remaining life of lease id until it drops below
// one second and sends the bounds of its end. It sends an error when the
// first poll already reads less than a second (then nothing bounds the
// end from below) or when the lease lives on past WaitLimit.
func WatchLeaseEnd(cli *clientv3.Client, id clientv3.LeaseID) <-chan LeaseEnd {
	out := make(chan LeaseEnd, 1)
	go func() {
		var lastAbove time.Time // when the last poll reading >= 1s was sent
		for deadline := time.Now().Add(WaitLimit); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			sent := time.Now()
			ttl, err := cli.TimeToLive(context.Background(), id)
			got := time.Now()
			if err == nil && ttl.TTL >= 1 {
				lastAbove = sent
				continue
			}
			if lastAbove.IsZero() {
				out <- LeaseEnd{Err: fmt.Errorf("lease %x had less than a second left at the first look (%v, %v)", int64(id), ttl, err)}
				return
			}
			out <- LeaseEnd{Earliest: lastAbove.Add(time.Second), Latest: got.Add(time.Second)}
			return
		}
		out <- LeaseEnd{Err: fmt.Errorf("lease %x still had a second left after %v", int64(id), WaitLimit)}
	}()
	return out
}
