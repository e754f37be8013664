//go:build e2e

package imagesync

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"poolc.dev/poolc/internal/testsshd"
	"poolc.dev/poolc/plugins/sdk"
)

func TestE2EActuatorThroughSSH(t *testing.T) {
	ctx := context.Background()
	tu := newTunnelled(t, nil)
	dir := writeLayout(t, imageOf(t, layers(t, 3, 256<<10), nil), nil)
	art, err := Load(ctx, Source{Kind: SourceOCILayout, Path: dir}, SourceTransport{})
	if err != nil {
		t.Fatal(err)
	}
	member := sdk.Member{PodPool: "harness", Context: "pool-node-b", SSHHost: tu.srv.Addr(),
		Registry: "k3d-lab-registry:" + strconv.Itoa(tu.reg.port), Image: "elanous-harness"}
	cfg := map[string]any{"source": "oci:" + dir, "known_hosts": tu.srv.KnownHosts, "ssh_key": tu.srv.ClientKey, "ssh_user": tu.srv.User}
	a := NewActuator("e2e")
	if ds := configure(t, a, cfg, member); ds.HasErrors() {
		t.Fatal(ds)
	}
	step := sdk.Step{ID: "image-sync:harness/pool-node-b", Kind: sdk.KindImageSync, Target: "harness/pool-node-b",
		ImageSync: &sdk.ImageSync{Member: member, Image: member.Image}}
	resp := a.Apply(ctx, sdk.ApplyRequest{Step: step}, nil)
	want := "elanous-harness@" + art.Digest.String()
	if resp.Diagnostics.HasErrors() || resp.Observed == nil || resp.Observed.Members[0].Image != want {
		t.Fatalf("apply: %+v\n%s", resp, tu.srv.Log())
	}
	if !tu.reg.serves(t, "elanous-harness", art.Digest.String()) {
		t.Fatal("the registry does not serve the image")
	}
	obs := a.Observe(ctx, sdk.ObserveRequest{})
	if len(obs.Fleet.Members) != 1 || obs.Fleet.Members[0].Image != want {
		t.Fatalf("observe: %+v", obs)
	}

	// The host was re-keyed: the step is refused, not retried.
	other := testsshd.NewKey(t, filepath.Join(t.TempDir(), "other"))
	known := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(known, []byte(tu.srv.KnownHostsLine(other)+"\n"), 0o600)
	cfg["known_hosts"] = known
	b := NewActuator("e2e")
	if ds := configure(t, b, cfg, member); ds.HasErrors() {
		t.Fatal(ds)
	}
	resp = b.Apply(ctx, sdk.ApplyRequest{Step: step}, nil)
	if !resp.Diagnostics.HasErrors() || resp.Retryable || !strings.Contains(resp.Diagnostics[0].Summary, "CHANGED") {
		t.Fatalf("changed host key: %+v", resp)
	}
}
