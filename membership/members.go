package membership

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store/etcdstore"
)

// Report is what a node's agent publishes about its node.
type Report struct {
	// Time is when the agent sampled the node.
	Time time.Time `json:"time"`
	// Host is the node's host name as the node sees it.
	Host string `json:"host"`
	// MemoryTotalGB and MemoryFreeGB are the node's memory, and what of
	// it is available to new processes, in GB.
	MemoryTotalGB float64 `json:"memory_total_gb"`
	MemoryFreeGB  float64 `json:"memory_free_gb"`
	// LlamaServers are the llama-server processes running on the node.
	LlamaServers []Process `json:"llama_servers"`
}

// Process is one process a node reported.
type Process struct {
	PID int `json:"pid"`
	// Command is its command line, arguments separated by spaces.
	Command string `json:"command"`
}

// clean strips what a node reported of control characters.
func (r *Report) clean() {
	r.Host = Clean(r.Host)
	for i := range r.LlamaServers {
		r.LlamaServers[i].Command = Clean(r.LlamaServers[i].Command)
	}
}

// Member is an enrolled node as the membership has it.
type Member struct {
	Name   string
	Joined time.Time
	// Cordon is what its operator asked (poolc node cordon|drain).
	Cordon pools.Cordon
	// Live says whether its agent's lease is alive; Report is its last
	// report then.
	Live   bool
	Report *Report

	lease clientv3.LeaseID
}

// Members reads the membership, in name order, in one read.
func (r *Registry) Members(ctx context.Context) ([]Member, error) {
	cctx, cancel := opCtx(ctx)
	defer cancel()
	resp, err := r.cli.Get(cctx, r.prefix+"members/", clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("reading the membership: %w", err)
	}
	byName := map[string]*Member{}
	cordons := map[string]pools.Cordon{}
	type live struct {
		report *Report
		lease  clientv3.LeaseID
	}
	reports := map[string]live{}
	for _, kv := range resp.Kvs {
		rest := strings.TrimPrefix(string(kv.Key), r.prefix+"members/")
		kind, name, _ := strings.Cut(rest, "/")
		switch kind {
		case "nodes":
			var rec nodeRecord
			if json.Unmarshal(kv.Value, &rec) != nil {
				continue
			}
			byName[name] = &Member{Name: Clean(name), Joined: rec.Joined}
		case "cordon":
			switch c := pools.Cordon(kv.Value); c {
			case pools.Cordoned, pools.Drained:
				cordons[name] = c
			}
		case "live":
			rep := &Report{}
			if json.Unmarshal(kv.Value, rep) != nil {
				rep = &Report{}
			}
			rep.clean()
			reports[name] = live{rep, clientv3.LeaseID(kv.Lease)}
		}
	}
	out := make([]Member, 0, len(byName))
	for name, m := range byName {
		m.Cordon = cordons[name]
		if l, ok := reports[name]; ok {
			m.Live, m.Report, m.lease = true, l.report, l.lease
		}
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Member reads one enrolled node.
func (r *Registry) Member(ctx context.Context, node string) (*Member, error) {
	ms, err := r.Members(ctx)
	if err != nil {
		return nil, err
	}
	for i := range ms {
		if ms[i].Name == node {
			return &ms[i], nil
		}
	}
	_, err = r.enrolled(ctx, node)
	return nil, err
}

// Mark sets, in st, the liveness and cordon of every enrolled node the
// pool declares: an enrolled node whose agent's lease lapsed is down, as
// the simulator treats a node whose heartbeats stopped. A node never
// enrolled keeps what the state says of it.
func Mark(st *pools.State, p *pools.Pool, ms []Member) {
	byName := map[string]Member{}
	for _, m := range ms {
		byName[m.Name] = m
	}
	for _, n := range p.Nodes {
		m, ok := byName[n.Name]
		if !ok {
			continue
		}
		i := nodeIndex(st, n.Name)
		st.Nodes[i].Down, st.Nodes[i].Cordon = !m.Live, m.Cordon
	}
	st.Normalize()
}

// MarkPool is Mark for a pool that keeps its state in etcd (its state
// block's, TLS files relative to dir), read from its membership there; for
// a pool on the file backend it does nothing.
func MarkPool(ctx context.Context, st *pools.State, p *pools.Pool, dir string) error {
	if p.State.Backend != "etcd" {
		return nil
	}
	r, closeRegistry, err := Open(p, dir)
	if err != nil {
		return err
	}
	defer closeRegistry()
	ms, err := r.Members(ctx)
	if err != nil {
		return err
	}
	Mark(st, p, ms)
	return nil
}

func nodeIndex(st *pools.State, name string) int {
	for i, n := range st.Nodes {
		if n.Name == name {
			return i
		}
	}
	st.Nodes = append(st.Nodes, pools.NodeState{Name: name})
	return len(st.Nodes) - 1
}

// Agent keeps a node's lease alive and publishes what it sees.
type Agent struct {
	Registry *Registry
	// Node and Credential are what join gave the node.
	Node, Credential string
	// Sample reads the node's report.
	Sample func() (Report, error)
	// Interval is how often the report is published again.
	Interval time.Duration
}

// ErrLeaseLost is returned by Run when the agent's lease ended under it:
// etcd was out of reach longer than the lease's TTL, or the node left.
var ErrLeaseLost = errors.New("the agent's lease ended (etcd out of reach for longer than its TTL, or the node left the pool)")

// Run checks the node's enrolment and credential, takes a lease of the
// registry's TTL, publishes the node's report on it and keeps it alive
// with heartbeats until ctx is done; then it revokes the lease, so the
// node is down at once. ready, if not nil, is called once the first
// report is published.
func (a *Agent) Run(ctx context.Context, ready func()) error {
	r := a.Registry
	rec, err := r.enrolled(ctx, a.Node)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(rec.CredentialHash), []byte(hash(a.Credential))) != 1 {
		return fmt.Errorf("the credential does not match node %s's enrolment (it was enrolled again since); run poolc node join again", a.Node)
	}
	gctx, cancel := opCtx(ctx)
	lease, err := r.cli.Grant(gctx, int64(r.ttl))
	cancel()
	if err != nil {
		return fmt.Errorf("taking the node's lease: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), etcdstore.OpTimeout)
		r.cli.Revoke(rctx, lease.ID)
		cancel()
	}()
	if err := a.publish(ctx, lease.ID); err != nil {
		return err
	}
	if ready != nil {
		ready()
	}
	beats, err := r.cli.KeepAlive(ctx, lease.ID)
	if err != nil {
		return fmt.Errorf("keeping the node's lease alive: %w", err)
	}
	tick := time.NewTicker(a.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-beats:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return ErrLeaseLost
			}
		case <-tick.C:
			if err := a.publish(ctx, lease.ID); err != nil {
				return err
			}
		}
	}
}

// publish writes the node's report on the lease, while the node is
// enrolled.
func (a *Agent) publish(ctx context.Context, lease clientv3.LeaseID) error {
	rep, err := a.Sample()
	if err != nil {
		return fmt.Errorf("reading the node: %w", err)
	}
	rep.clean()
	data, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	r := a.Registry
	cctx, cancel := opCtx(ctx)
	defer cancel()
	resp, err := r.cli.Txn(cctx).
		If(clientv3.Compare(clientv3.CreateRevision(r.key("nodes", a.Node)), ">", 0)).
		Then(clientv3.OpPut(r.key("live", a.Node), string(data), clientv3.WithLease(lease))).
		Commit()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("publishing the node's report: %w", err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("node %s left the pool", a.Node)
	}
	return nil
}
