package membership

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"poolc.dev/poolc/internal/testing/etcdtest"
	"poolc.dev/poolc/pools"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// A token enrolls the node it is bound to, once; another node cannot use
// it; etcd never holds the token itself.
func TestATokenEnrollsItsNodeOnceAndNoOther(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	r := New(cli, "/poolc/lab", 2)
	ctx := context.Background()
	tok, exp, err := r.CreateToken(ctx, "node-a", time.Hour, now)
	if err != nil || !exp.Equal(now.Add(time.Hour)) {
		t.Fatalf("token: %v %v", exp, err)
	}
	all, _ := cli.Get(ctx, "/", clientv3.WithPrefix())
	for _, kv := range all.Kvs {
		if strings.Contains(string(kv.Key)+string(kv.Value), tok) {
			t.Fatalf("the token is stored in etcd: %s", kv.Key)
		}
	}
	if _, err := r.Join(ctx, tok, "node-b", now); err == nil || !strings.Contains(err.Error(), "bound to another node, not to node-b") {
		t.Fatalf("node B with A's token: %v", err)
	}
	cred, err := r.Join(ctx, tok, "node-a", now)
	if err != nil || cred == "" {
		t.Fatalf("join: %v", err)
	}
	if _, err := r.Join(ctx, tok, "node-a", now); !errors.Is(err, ErrBadToken) {
		t.Fatalf("the token used twice: %v", err)
	}
	if _, err := r.Join(ctx, "poolc-join-guess", "node-a", now); !errors.Is(err, ErrBadToken) {
		t.Fatalf("an unknown token: %v", err)
	}
	late, _, _ := r.CreateToken(ctx, "node-a", time.Hour, now)
	if _, err := r.Join(ctx, late, "node-a", now.Add(time.Hour)); !errors.Is(err, ErrBadToken) {
		t.Fatalf("an expired token: %v", err)
	}
	// A re-enrolment with a token bound to the node replaces its
	// credential: the old one no longer runs an agent.
	again, _, _ := r.CreateToken(ctx, "node-a", time.Hour, now)
	cred2, err := r.Join(ctx, again, "node-a", now)
	if err != nil || cred2 == cred {
		t.Fatalf("re-enrolment: %v", err)
	}
	old := &Agent{Registry: r, Node: "node-a", Credential: cred, Interval: time.Second, Sample: fixedReport}
	if err := old.Run(ctx, nil); err == nil || !strings.Contains(err.Error(), "credential does not match") {
		t.Fatalf("an agent with the old credential: %v", err)
	}
}

func fixedReport() (Report, error) {
	return Report{Host: "a\x1b[31m", MemoryTotalGB: 128, MemoryFreeGB: 100, LlamaServers: []Process{{PID: 7, Command: "llama-server\x07 --port 1"}}}, nil
}

// An agent whose process vanishes (no heartbeat, no goodbye) is down one
// lease TTL after its last heartbeat, not before; Mark then sets the node
// down in the state for the planner.
func TestANodeIsDownOneTTLAfterItsAgentsLastHeartbeat(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	admin := New(c.Client(t), "/p", 3)
	tok, _, _ := admin.CreateToken(ctx, "a", time.Hour, time.Now())
	cred, err := admin.Join(ctx, tok, "a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	agentCli := c.SeverableClient(t)
	ready := make(chan struct{})
	actx, stop := context.WithCancel(ctx)
	defer stop()
	go (&Agent{Registry: New(agentCli.Client, "/p", 3), Node: "a", Credential: cred, Interval: 100 * time.Millisecond, Sample: fixedReport}).Run(actx, func() { close(ready) })
	<-ready
	ms, err := admin.Members(ctx)
	if err != nil || len(ms) != 1 || !ms[0].Live || ms[0].Report.Host != "a[31m" || ms[0].Report.LlamaServers[0].Command != "llama-server --port 1" {
		t.Fatalf("members: %+v %v", ms, err)
	}
	time.Sleep(1500 * time.Millisecond) // a few heartbeats
	ttl, err := agentCli.TimeToLive(ctx, ms[0].lease)
	if err != nil {
		t.Fatal(err)
	}
	agentCli.Sever() // as SIGKILL would: no more heartbeats, no revoke
	vanished := time.Now()
	// Live until the lease's remaining life has passed...
	for time.Since(vanished) < time.Duration(ttl.TTL)*time.Second-500*time.Millisecond {
		if m, _ := admin.Member(ctx, "a"); m == nil || !m.Live {
			t.Fatalf("reported down %v after the last heartbeat, before the lease's %ds", time.Since(vanished), ttl.TTL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// ...and down once etcd revokes the lapsed lease. etcd looks for lapsed
	// leases every 500 ms and revokes through raft, which a loaded machine
	// slows by seconds; the one-second bound is asserted, with a real agent
	// process, by cmd/poolc/tests/nodeagent's TestEtcdAKilledNodeAgentIsDownOneTTLAfterItsLastHeartbeat.
	for deadline := vanished.Add(time.Duration(ttl.TTL)*time.Second + 30*time.Second); ; time.Sleep(100 * time.Millisecond) {
		m, _ := admin.Member(ctx, "a")
		if m != nil && !m.Live {
			t.Logf("down %v after the last heartbeat (lease life left then %ds)", time.Since(vanished), ttl.TTL)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still live %v after the last heartbeat, lease %ds", time.Since(vanished), ttl.TTL)
		}
	}
	ms, _ = admin.Members(ctx)
	p := &pools.Pool{Nodes: []pools.Node{{Name: "a"}, {Name: "b"}}}
	st := &pools.State{}
	st.Nodes = []pools.NodeState{{Name: "b", Down: true}}
	Mark(st, p, ms)
	if !st.IsDown("a") || !st.IsDown("b") {
		t.Fatalf("marked: %+v", st.Nodes)
	}
}

// Cordon and drain reach the state through Mark; leave needs a drained
// node and removes it.
func TestCordonDrainAndLeave(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	r := New(c.Client(t), "/p", 2)
	if err := r.SetCordon(ctx, "ghost", pools.Cordoned); err == nil || !strings.Contains(err.Error(), "not enrolled") {
		t.Fatalf("cordon of a node never enrolled: %v", err)
	}
	tok, _, _ := r.CreateToken(ctx, "a", time.Hour, time.Now())
	if _, err := r.Join(ctx, tok, "a", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := r.SetCordon(ctx, "a", pools.Cordoned); err != nil {
		t.Fatal(err)
	}
	if err := r.Leave(ctx, "a"); err == nil || !strings.Contains(err.Error(), "not drained") {
		t.Fatalf("leave of a cordoned node: %v", err)
	}
	ms, _ := r.Members(ctx)
	st := &pools.State{}
	Mark(st, &pools.Pool{Nodes: []pools.Node{{Name: "a"}}}, ms)
	if st.Nodes[0].Cordon != pools.Cordoned || !st.Nodes[0].Down {
		t.Fatalf("marked: %+v", st.Nodes)
	}
	r.SetCordon(ctx, "a", pools.Drained)
	if err := r.Leave(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if ms, _ := r.Members(ctx); len(ms) != 0 {
		t.Fatalf("after leave: %+v", ms)
	}
}
