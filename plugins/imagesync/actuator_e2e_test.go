//go:build e2e

package imagesync

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"poolc.dev/poolc/internal/testing/testsshd"
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

// TestE2ERegistrySourceOverPlainHTTPWithRefresh syncs from a registry
// source, Debian's docker-registry speaking plain HTTP on 127.0.0.5,
// allowed by name in the config's registries, to a member's
// docker-registry through a real sshd: Observe (the refresh) loads the
// source under a context that ends before the sync, which then reads
// every blob from the source under its own. Without the registries entry
// the source is refused, and Observe's warning names plain_http.
func TestE2ERegistrySourceOverPlainHTTPWithRefresh(t *testing.T) {
	src := startDistributionOn(t, "127.0.0.5")
	img := imageOf(t, layers(t, 3, 256<<10), nil)
	ref, err := name.ParseReference(src.addr()+"/harness:v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	digest := mustDigest(t, img).String()
	tu := newTunnelled(t, nil)
	member := sdk.Member{PodPool: "harness", Context: "pool-node-b", SSHHost: tu.srv.Addr(),
		Registry: "k3d-lab-registry:" + strconv.Itoa(tu.reg.port), Image: "harness:v1"}
	cfg := map[string]any{"source": "registry:" + src.addr() + "/harness:v1", "known_hosts": tu.srv.KnownHosts, "ssh_key": tu.srv.ClientKey, "ssh_user": tu.srv.User,
		"registries": map[string]any{src.addr(): map[string]any{"plain_http": true}}}
	a := NewActuator("e2e")
	if ds := configure(t, a, cfg, member); ds.HasErrors() {
		t.Fatal(ds)
	}
	octx, cancel := context.WithCancel(context.Background())
	obs := a.Observe(octx, sdk.ObserveRequest{})
	cancel()
	if len(obs.Diagnostics) != 0 || len(obs.Fleet.Images) != 1 || obs.Fleet.Images[0].Digest != digest {
		t.Fatalf("observe: %+v", obs)
	}
	step := sdk.Step{ID: "image-sync:harness/pool-node-b", Kind: sdk.KindImageSync, Target: "harness/pool-node-b",
		ImageSync: &sdk.ImageSync{Member: member, Image: "harness:v1@" + digest, Digest: digest}}
	resp := a.Apply(context.Background(), sdk.ApplyRequest{Step: step}, nil)
	if resp.Diagnostics.HasErrors() || resp.Observed == nil || resp.Observed.Members[0].Image != "harness:v1@"+digest {
		t.Fatalf("apply after the refresh: %+v\n%s", resp, src.log)
	}
	if !tu.reg.serves(t, "harness", digest) {
		t.Fatal("the member's registry does not serve the image")
	}

	delete(cfg, "registries")
	b := NewActuator("e2e")
	if ds := configure(t, b, cfg, member); ds.HasErrors() {
		t.Fatal(ds)
	}
	obs = b.Observe(context.Background(), sdk.ObserveRequest{})
	if len(obs.Diagnostics) != 1 || !strings.Contains(obs.Diagnostics[0].Summary, "plain_http = true") {
		t.Fatalf("observe without the registries entry: %+v", obs.Diagnostics)
	}
}
