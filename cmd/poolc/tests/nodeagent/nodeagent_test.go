// Package nodeagent tests node membership in etcd with the real poolc
// binary: tokens bound to a node, a node agent killed with SIGKILL
// reported down one lease TTL after its last heartbeat and not before,
// the plan then moving its lanes, and no secret printed or stored.
package nodeagent

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"poolc.dev/poolc/compiler/planjson"
	"poolc.dev/poolc/internal/testing/etcdtest"
	"poolc.dev/poolc/internal/testing/poolctest"
	"poolc.dev/poolc/membership"
)

// outputs collects everything the poolc processes of a test printed.
type outputs struct {
	t    *testing.T
	bin  string
	seen []string
}

// run runs poolc with env added to the environment and returns its
// stdout and stderr, which it keeps.
func (o *outputs) run(env []string, args ...string) (stdout, stderr string, err error) {
	o.t.Helper()
	cmd := exec.Command(o.bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	o.seen = append(o.seen, out.String()+errOut.String())
	return out.String(), errOut.String(), err
}

// planSteps is the plan poolc plan --format json prints, without the time it
// was made.
func planSteps(t *testing.T, o *outputs, args ...string) []planjson.Step {
	t.Helper()
	out, errOut, err := o.run(nil, append([]string{"plan", "--format", "json"}, args...)...)
	if err != nil {
		t.Fatalf("plan --format json %v: %v\n%s", args, err, errOut)
	}
	var p planjson.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan --format json: %v\n%s", err, out)
	}
	return p.Steps
}

// A node agent killed with SIGKILL: the node is reported up until its
// lease lapses, one lease TTL after the agent's last heartbeat, and down
// within a second after; the plan then moves its lane as it does for a
// node the simulator reports down (plan --assume-down). Its token was
// bound to it: it enrolled no other node and not the same node twice.
// Neither the token nor the node's credential appears in anything poolc
// printed but token create's stdout, nor anywhere in etcd.
func TestEtcdAKilledNodeAgentIsDownOneTTLAfterItsLastHeartbeat(t *testing.T) {
	o := &outputs{t: t, bin: poolctest.Binary(t)}
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	dir := t.TempDir()
	pool := poolctest.WriteNodePool(t, dir, c.Endpoints()[0])
	const ttl = 3 * time.Second
	if out, errOut, err := o.run(nil, "apply", "--auto-approve", pool); err != nil {
		t.Fatalf("apply: %v\n%s%s", err, out, errOut)
	}

	token, errOut, err := o.run(nil, "node", "token", "create", "--node", "a", pool)
	token = strings.TrimSpace(token)
	o.seen = o.seen[:len(o.seen)-1]
	o.seen = append(o.seen, errOut) // its stdout is the token, by design
	if err != nil || !strings.HasPrefix(token, "poolc-join-") {
		t.Fatalf("token create: %v %q\n%s", err, token, errOut)
	}
	if _, errOut, err := o.run(nil, "node", "join", "--token", token, "--node", "b", "--credential", filepath.Join(dir, "b.cred"), pool); err == nil || !strings.Contains(errOut, "the token is bound to another node, not to b") {
		t.Fatalf("node b joined with a's token: %v\n%s", err, errOut)
	}
	cred := filepath.Join(dir, "a.cred")
	if out, errOut, err := o.run([]string{"POOLC_JOIN_TOKEN=" + token}, "node", "join", "--node", "a", "--credential", cred, pool); err != nil {
		t.Fatalf("node a joining with its token: %v\n%s%s", err, out, errOut)
	}
	if _, errOut, err := o.run([]string{"POOLC_JOIN_TOKEN=" + token}, "node", "join", "--node", "a", "--credential", filepath.Join(dir, "a2.cred"), pool); err == nil || !strings.Contains(errOut, "the token is not valid: unknown, already used or expired") {
		t.Fatalf("node a joined twice with one token: %v\n%s", err, errOut)
	}
	var credFile struct{ Credential string }
	if data, err := os.ReadFile(cred); err != nil || json.Unmarshal(data, &credFile) != nil || credFile.Credential == "" {
		t.Fatalf("the credential file: %v", err)
	}

	agent := exec.Command(o.bin, "node", "agent", "--credential", cred, "--interval", "200ms", pool)
	var agentOut bytes.Buffer
	agent.Stdout, agent.Stderr = &agentOut, &agentOut
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	reg := membership.New(cli, "/nodes/", 3)
	for deadline := time.Now().Add(poolctest.WaitLimit); ; time.Sleep(20 * time.Millisecond) {
		if m, _ := reg.Member(context.Background(), "a"); m != nil && m.Live {
			break
		}
		if time.Now().After(deadline) {
			agent.Process.Kill()
			agent.Wait()
			t.Fatalf("node a never came up:\n%s", &agentOut)
		}
	}
	if out, _, err := o.run(nil, "plan", "--detailed-exitcode", pool); err != nil || !strings.Contains(out, "No changes.") {
		t.Fatalf("plan with a up: %v\n%s", err, out)
	}
	// What the simulator's planner does with a node reported down.
	simulated := planSteps(t, o, "--assume-down", "a", pool)

	// Let the agent run its loop a while, its lease renewed and its
	// report published again every interval: kill it in that steady
	// state, not just after it started.
	var live *clientv3.GetResponse
	for published, lastRev, deadline := 0, int64(0), time.Now().Add(poolctest.WaitLimit); published < 3; time.Sleep(20 * time.Millisecond) {
		var err error
		live, err = cli.Get(context.Background(), "/nodes/members/live/a")
		if err != nil || len(live.Kvs) == 0 || live.Kvs[0].Lease == 0 {
			poolctest.Kill(t, agent)
			t.Fatalf("node a's live key: %v %v\n%s", live, err, &agentOut)
		}
		if rev := live.Kvs[0].ModRevision; rev != lastRev {
			published, lastRev = published+1, rev
		}
		if time.Now().After(deadline) {
			poolctest.Kill(t, agent)
			t.Fatalf("node a's agent published its report %d times in %v:\n%s", published, poolctest.WaitLimit, &agentOut)
		}
	}
	end := poolctest.WatchLeaseEnd(cli, clientv3.LeaseID(live.Kvs[0].Lease))
	killed := poolctest.Kill(t, agent)
	o.seen = append(o.seen, agentOut.String())

	// Poll the membership until it says down, noting when each question
	// was sent and its answer came back: an answer was given between the
	// two, so "down" received before the lease surely lapsed, or "up"
	// asked more than a second after it surely lapsed, is a fault
	// whatever the load of the machine; the instants this process sees
	// otherwise are only bounds.
	var lastUpSent, lastUp, down time.Time
	for deadline := killed.Add(poolctest.WaitLimit); down.IsZero(); time.Sleep(10 * time.Millisecond) {
		sent := time.Now()
		m, err := reg.Member(context.Background(), "a")
		got := time.Now()
		switch {
		case err != nil:
			t.Fatal(err)
		case m.Live:
			lastUpSent, lastUp = sent, got
		default:
			down = got
		}
		if got.After(deadline) {
			t.Fatalf("node a is still up %v after its agent was killed", poolctest.WaitLimit)
		}
	}
	e := <-end
	if e.Err != nil {
		t.Fatal(e.Err)
	}
	// The lease lapsed between e.Earliest and e.Latest, one TTL after the
	// last heartbeat etcd received.
	t.Logf("last heartbeat %v..%v before the kill; reported up %v and down %v after the kill, lease lapsed %v..%v after the kill",
		(killed.Sub(e.Latest.Add(-ttl))).Round(time.Millisecond), killed.Sub(e.Earliest.Add(-ttl)).Round(time.Millisecond),
		lastUp.Sub(killed).Round(time.Millisecond), down.Sub(killed).Round(time.Millisecond),
		e.Earliest.Sub(killed).Round(time.Millisecond), e.Latest.Sub(killed).Round(time.Millisecond))
	if down.Before(e.Earliest) {
		t.Errorf("node a was reported down %v before its lease lapsed, one TTL (%v) after its last heartbeat", e.Earliest.Sub(down).Round(time.Millisecond), ttl)
	}
	if late := lastUpSent.Sub(e.Latest); late > time.Second {
		t.Errorf("node a was reported up when asked %v after its lease lapsed; want down within a second", late.Round(time.Millisecond))
	}

	if out, _, err := o.run(nil, "node", "list", pool); err != nil || !regexp.MustCompile(`(?m)^a +down `).MatchString(out) {
		t.Errorf("node list: %v\n%s", err, out)
	}
	moved := planSteps(t, o, pool)
	if len(moved) == 0 || !reflect.DeepEqual(moved, simulated) {
		t.Errorf("the plan with a's lease lapsed:\n%+v\nthe plan with a assumed down:\n%+v", moved, simulated)
	}
	out, _, err := o.run(nil, "plan", "--detailed-exitcode", pool)
	if !strings.Contains(out, "start chat@b") || !strings.Contains(out, "a is down") {
		t.Errorf("the plan does not move chat off a: %v\n%s", err, out)
	}
	o.run(nil, "state", "pull", pool)
	o.run(nil, "node", "list", "--json", pool)

	secrets := map[string]string{"token": token, "credential": credFile.Credential}
	for _, seen := range o.seen {
		for what, secret := range secrets {
			if strings.Contains(seen, secret) {
				t.Errorf("poolc printed the %s:\n%s", what, seen)
			}
		}
	}
	all, err := cli.Get(context.Background(), "", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range all.Kvs {
		for what, secret := range secrets {
			if strings.Contains(string(kv.Key), secret) || strings.Contains(string(kv.Value), secret) {
				t.Errorf("etcd holds the %s in %s", what, kv.Key)
			}
		}
	}
	if len(all.Kvs) < 3 {
		t.Errorf("etcd holds only %d keys; the search for the token looked at nothing", len(all.Kvs))
	}
	t.Logf("looked for the token and the credential in %d outputs and %d etcd keys", len(o.seen), len(all.Kvs))
}
