//go:build e2e

package haproxy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/loadgen"
)

// TestE2EApplyUpgradesAModelUnderTheSameNameUnderLoad is a model upgrade
// through poolc, twice: the pool gives model q (lane cognition's) new
// weights, a new sha256 and source under the same name and path, and
// poolc apply replaces the lane make-before-break while the load
// generator streams chat completions for its alias through HAProxy. The
// first upgrade stages the weights beside the file the old process loads
// and starts on the lane's spare port; the second goes back to the
// model's own path, which no process holds by then, and the lane's own
// port. Each time not one request fails or is cut, a refreshed plan is
// then empty, and n1 runs exactly one process of the lane, which serves a
// file with the new sha256.
func TestE2EApplyUpgradesAModelUnderTheSameNameUnderLoad(t *testing.T) {
	f := newFleet(t)
	f.writePool(`"n1", "n2"`)
	f.apply()
	f.planIsEmpty("after the bring-up")
	for round, name := range []string{"q2.gguf", "q3.gguf"} {
		port, path := f.upgradeUnderLoad(name)
		t.Logf("upgrade %d: cognition runs on n1 port %d (declared %d) from %s", round+1, port, f.port("cognition"), path)
		if round == 1 && (port != f.port("cognition") || path != filepath.Join(f.dir, "models", "q.gguf")) {
			t.Errorf("the second upgrade left cognition at port %d from %s; want its own port %d and the model's path", port, path, f.port("cognition"))
		}
	}
}

// upgradeUnderLoad gives model q new weights served as name, applies the
// pool under load and checks the upgrade; it returns the port and model
// path of the one process of cognition on n1.
func (f *fleet) upgradeUnderLoad(name string) (int, string) {
	t := f.t
	t.Helper()
	upgraded := serveWeights(t, name)
	f.applyUnderLoad("the upgrade to "+name, 6, []string{"chat"}, func() {
		f.weights["q"] = upgraded
		f.writePool(`"n1", "n2"`)
	}, "prefetch:q@n1", "start:cognition@n1", "route:chat", "drain:cognition@n1", "stop:cognition@n1")
	f.planIsEmpty("after the upgrade to " + name)

	// The live processes themselves, found by their command lines.
	var ports []string
	for addr, n := range f.laneProcesses() {
		if host, port, _ := strings.Cut(addr, ":"); host == f.nodes[0].Host {
			for range n {
				ports = append(ports, port)
			}
		}
	}
	if len(ports) != 1 {
		t.Fatalf("after the upgrade to %s n1 runs %d processes of cognition (ports %v), want 1", name, len(ports), ports)
	}
	port, _ := strconv.Atoi(ports[0])
	resp, err := http.Get("http://" + joinHostPort(f.nodes[0].Host, port) + "/props")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var props struct {
		ModelPath string `json:"model_path"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&props); err != nil {
		t.Fatalf("/props of cognition: %v", err)
	}
	data, err := os.ReadFile(props.ModelPath)
	if err != nil {
		t.Fatalf("cognition's model_path: %v", err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != upgraded.sum {
		t.Errorf("cognition on n1 (port %d) serves %s with sha256 %x, want %s's %s", port, props.ModelPath, sum, name, upgraded.sum)
	}
	return port, props.ModelPath
}

// TestE2EAnInterruptionUnderLoadTakesTheAliasOffWhileTheLaneDrains is an
// upgrade the plan reports as an interruption (an on-demand lane is one
// section of its node's router, so new weights replace it in place) under
// a load that always has requests in flight. apply --allow-interruption
// first takes the alias off the gateway, so the lane's requests in flight
// finish and it drains (with the alias still routed there it never does:
// new requests keep arriving), then stops it, starts it with the new
// weights and routes the alias back. The requests that fail meanwhile are
// refused at the gateway, never cut; after it the alias is served and a
// refreshed plan is empty.
func TestE2EAnInterruptionUnderLoadTakesTheAliasOffWhileTheLaneDrains(t *testing.T) {
	f := newFleet(t)
	f.residency["cognition"] = "on-demand"
	f.writePool(`"n1", "n2"`)
	f.apply()
	f.planIsEmpty("after the bring-up")

	load := loadgen.Start(f.proxy.base(), "chat", 6, 10)
	if !load.WaitServed(20, 60*time.Second) {
		t.Fatalf("no traffic before the upgrade: %d failed", load.Failed())
	}
	f.weights["q"] = serveWeights(t, "q2.gguf")
	f.writePool(`"n1", "n2"`)
	out, code := f.run("apply", "--auto-approve", "--allow-interruption", "pool.hcl")
	if code != 0 {
		load.Stop()
		t.Fatalf("poolc apply --allow-interruption: exit %d\n%s", code, out)
	}
	f.outputNames(out, "chat unserved for about", "route:chat~interim", "drain:cognition@n1", "stop:cognition@n1", "start:cognition@n1", "route:chat ")
	if !load.WaitServed(20, 60*time.Second) {
		t.Fatalf("no traffic after the upgrade: %d failed\n%s", load.Failed(), out)
	}
	res := load.Stop()
	t.Logf("the interrupted upgrade under load: %d requests served, %d refused, in %s", res.Served, res.Failed, res.Duration.Round(time.Millisecond))
	for _, e := range res.Errors {
		if !strings.HasPrefix(e, "status 503") {
			t.Errorf("a request failed other than by the gateway's refusal while chat was off it: %s", e)
		}
	}
	f.planIsEmpty("after the upgrade")
}
