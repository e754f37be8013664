//go:build e2e

package haproxy

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"poolc.dev/poolc/internal/sshx"
	"poolc.dev/poolc/internal/testing/loadgen"
	"poolc.dev/poolc/internal/testing/testsshd"
)

// TestE2EARouteThroughAnSSHTunnel flips a route on a HAProxy whose admin
// socket listens on the gateway host's loopback only, reached through an
// SSH tunnel, with the map and state files written over SSH, under load.
func TestE2EARouteThroughAnSSHTunnel(t *testing.T) {
	ctx := context.Background()
	ls := newLanes(t)
	a := ls.start("node-a", "cognition", "chat")
	b := ls.start("node-b", "scribe", "chat")
	spec := testSpec(t, []LaneBackend{{Lane: "cognition", Addr: a.Host, Port: a.Port}, {Lane: "scribe"}},
		[]AliasRoute{{Alias: "chat", Lane: "cognition"}})
	adminPort := freePort(t)
	spec.AdminSocket = "ipv4@127.0.0.1:" + strconv.Itoa(adminPort)
	p := startProxy(t, spec)

	srv := testsshd.Start(t)
	pool, err := sshx.NewPool(srv.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	client := pool.Client(srv.Endpoint())
	g := p.gatewayThrough(t, Tunnel(client, "127.0.0.1:"+strconv.Itoa(adminPort)), SSHFiles{Client: client})

	load := loadgen.Start(p.base(), "chat", 4, 10)
	load.WaitServed(20, 20*time.Second)
	if err := g.Route(ctx, "chat", endpoint("node-b", b), nil); err != nil {
		t.Fatal(err)
	}
	ls.stop("node-a", a)
	load.WaitServed(20, 20*time.Second)
	res := load.Stop()
	t.Logf("through the tunnel: served %d, failed %d", res.Served, res.Failed)
	if res.Failed != 0 || res.Served < 40 {
		t.Fatalf("%+v", res)
	}
	if m, _ := os.ReadFile(spec.MapFile); string(m) != "chat lane_scribe\n" {
		t.Errorf("map file written over SSH: %q", m)
	}
	if obs, err := g.Observe(ctx); err != nil || len(obs) != 1 || obs[0].Endpoints[0].Node != "node-b" {
		t.Errorf("observed through the tunnel: %+v %v", obs, err)
	}
	if st, _ := os.ReadFile(spec.StateFile); len(st) == 0 {
		t.Error("no server state file written over SSH")
	}
}
