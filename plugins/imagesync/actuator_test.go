package imagesync

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"poolc.dev/poolc/internal/testing/deadaddr"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/plugins/sdk/sdktest"
)

func TestActuatorConformance(t *testing.T) { sdktest.Conformance(t, NewActuator("test")) }

func configure(t *testing.T, a *Actuator, cfg map[string]any, members ...sdk.Member) sdk.Diagnostics {
	t.Helper()
	raw, _ := json.Marshal(cfg)
	return a.Configure(context.Background(), sdk.ConfigureRequest{Pool: "lab", ConfigJSON: raw, WorkDir: t.TempDir(), Inventory: sdk.Inventory{Members: members}}).Diagnostics
}

func TestActuatorSyncsObservesAndRecordsTheServedDigest(t *testing.T) {
	ctx := context.Background()
	dir := writeLayout(t, imageOf(t, layers(t, 3, 64<<10), nil), nil)
	art, err := Load(ctx, Source{Kind: SourceOCILayout, Path: dir}, SourceTransport{})
	if err != nil {
		t.Fatal(err)
	}
	var members []sdk.Member
	var regs []*testRegistry
	for _, ctxName := range []string{"pool-node-b", "pool-node-c"} {
		reg := newTestRegistry(t)
		_, port, _ := net.SplitHostPort(reg.addr())
		regs = append(regs, reg)
		members = append(members, sdk.Member{PodPool: "harness", Context: ctxName, Registry: "k3d-lab-registry:" + port, Image: "elanous-harness"})
	}
	a := NewActuator("test")
	if ds := configure(t, a, map[string]any{"source": "oci:" + dir, "build": "ci-7"}, members...); ds.HasErrors() {
		t.Fatal(ds)
	}
	obs := a.Observe(ctx, sdk.ObserveRequest{})
	if obs.Diagnostics.HasErrors() || len(obs.Fleet.Members) != 2 || obs.Fleet.Members[0].Image != "" {
		t.Fatalf("observe before: %+v", obs)
	}
	for i, img := range obs.Fleet.Images {
		if img.Context != members[i].Context || img.Image != "elanous-harness" || img.Digest != art.Digest.String() || img.MissingBytes != art.TotalBlobBytes()+art.Size {
			t.Errorf("observe before: image at %s is %+v, want %s missing %d bytes", members[i].Context, img, art.Digest, art.TotalBlobBytes()+art.Size)
		}
	}
	if len(obs.Fleet.Images) != 2 || len(obs.Diagnostics) != 0 {
		t.Errorf("observe before: images %+v, diagnostics %+v", obs.Fleet.Images, obs.Diagnostics)
	}
	want := "elanous-harness@" + art.Digest.String()
	for i, m := range members {
		var mu sync.Mutex
		var prog []sdk.Progress
		step := sdk.Step{ID: "image-sync:harness/" + m.Context, Kind: sdk.KindImageSync, Target: "harness/" + m.Context,
			ImageSync: &sdk.ImageSync{Member: m, Image: m.Image}}
		resp := a.Apply(ctx, sdk.ApplyRequest{Step: step}, func(p sdk.Progress) { mu.Lock(); prog = append(prog, p); mu.Unlock() })
		if resp.Diagnostics.HasErrors() || resp.Observed == nil || len(resp.Observed.Members) != 1 || resp.Observed.Members[0].Image != want {
			t.Fatalf("apply %s: %+v", m.Context, resp)
		}
		if regs[i].blobUploads.Load() != 4 {
			t.Errorf("member %s: %d blob uploads, want 4", m.Context, regs[i].blobUploads.Load())
		}
		sent := prog[len(prog)-2]
		if sent.BytesTotal != art.TotalBlobBytes()+art.Size || sent.BytesDone != sent.BytesTotal {
			t.Errorf("byte progress %+v, want %d of %d bytes", sent, art.TotalBlobBytes()+art.Size, art.TotalBlobBytes()+art.Size)
		}
		last := prog[len(prog)-1]
		if last.Fraction != 1 || !strings.Contains(last.Message, "k3d-lab-registry") || !strings.Contains(last.Message, "ci-7-"+art.Digest.Hex[:12]) {
			t.Errorf("last progress %+v", last)
		}
	}
	obs = a.Observe(ctx, sdk.ObserveRequest{})
	if len(obs.Diagnostics) != 0 {
		t.Errorf("observe after: %+v", obs.Diagnostics)
	}
	for _, m := range obs.Fleet.Members {
		if m.Image != want {
			t.Errorf("observe after: %s holds %q, want %q", m.Context, m.Image, want)
		}
	}
	for _, img := range obs.Fleet.Images {
		if img.MissingBytes != 0 || img.Digest != art.Digest.String() {
			t.Errorf("observe after: image at %s is %+v, want nothing missing", img.Context, img)
		}
	}

	// A step pinning another digest fails, not retryably.
	step := sdk.Step{ID: "image-sync:x", Kind: sdk.KindImageSync, ImageSync: &sdk.ImageSync{Member: members[0], Image: "elanous-harness", Digest: "sha256:" + strings.Repeat("1", 64)}}
	if resp := a.Apply(ctx, sdk.ApplyRequest{Step: step}, nil); !resp.Diagnostics.HasErrors() || resp.Retryable {
		t.Errorf("pin mismatch: %+v", resp)
	}
	// A registry that went away fails retryably.
	regs[1].srv.Close()
	step.ImageSync = &sdk.ImageSync{Member: members[1], Image: "elanous-harness"}
	if resp := a.Apply(ctx, sdk.ApplyRequest{Step: step}, nil); !resp.Diagnostics.HasErrors() || !resp.Retryable {
		t.Errorf("registry down: %+v", resp)
	}
}

func TestActuatorConfigureDiagnostics(t *testing.T) {
	member := sdk.Member{PodPool: "harness", Context: "pool-node-b", SSHHost: "node-b", Registry: "k3d-r:5051", Image: "elanous-harness"}
	for _, tc := range []struct {
		cfg  map[string]any
		path string
		msg  string
	}{
		{map[string]any{"source": "nope:x"}, "source", "source"},
		{map[string]any{"build": "-bad"}, "build", "build"},
		{map[string]any{"source": "oci:x", "sshkey": "k"}, "sshkey", "not allowed"},
		{map[string]any{"source": "oci:x"}, "", "known_hosts"},
	} {
		ds := configure(t, NewActuator("t"), tc.cfg, member)
		if !ds.HasErrors() || !strings.Contains(ds[0].Summary, tc.msg) || (tc.path != "" && strings.Join(ds[0].Path, ".") != tc.path) {
			t.Errorf("config %v: %+v", tc.cfg, ds)
		}
	}
}

func TestActuatorBoundsMembersSyncedAtOnce(t *testing.T) {
	ctx := context.Background()
	dir := writeLayout(t, imageOf(t, layers(t, 2, 256<<10), nil), nil)
	var members []sdk.Member
	for i := 0; i < 6; i++ {
		_, port, _ := net.SplitHostPort(newTestRegistry(t).addr())
		members = append(members, sdk.Member{PodPool: "harness", Context: fmt.Sprintf("member-%d", i), Registry: "k3d-r:" + port, Image: "elanous-harness"})
	}
	a := NewActuator("test")
	if ds := configure(t, a, map[string]any{"source": "oci:" + dir, "parallel": 2}, members...); ds.HasErrors() {
		t.Fatal(ds)
	}
	var mu sync.Mutex
	active, most := map[string]bool{}, 0
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			step := sdk.Step{ID: "image-sync:harness/" + m.Context, Kind: sdk.KindImageSync, ImageSync: &sdk.ImageSync{Member: m, Image: m.Image}}
			resp := a.Apply(ctx, sdk.ApplyRequest{Step: step}, func(p sdk.Progress) {
				mu.Lock()
				defer mu.Unlock()
				active[m.Context] = p.Fraction < 1
				n := 0
				for _, on := range active {
					if on {
						n++
					}
				}
				most = max(most, n)
			})
			if resp.Diagnostics.HasErrors() {
				t.Errorf("%s: %v", m.Context, resp.Diagnostics)
			}
		}()
	}
	wg.Wait()
	if most > 2 {
		t.Errorf("%d members were being synced at once, want at most 2", most)
	}
}

func TestActuatorObservesThePinnedDigest(t *testing.T) {
	ctx := context.Background()
	dir := writeLayout(t, imageOf(t, layers(t, 2, 32<<10), nil), nil)
	art, err := Load(ctx, Source{Kind: SourceOCILayout, Path: dir}, SourceTransport{})
	if err != nil {
		t.Fatal(err)
	}
	reg := newTestRegistry(t)
	_, port, _ := net.SplitHostPort(reg.addr())
	pinned := "elanous-harness@" + art.Digest.String()
	m := sdk.Member{PodPool: "harness", Context: "pool-node-b", Registry: "k3d-r:" + port, Image: pinned}
	a := NewActuator("test")
	if ds := configure(t, a, map[string]any{"source": "oci:" + dir}, m); ds.HasErrors() {
		t.Fatal(ds)
	}
	obs := a.Observe(ctx, sdk.ObserveRequest{})
	if len(obs.Fleet.Members) != 1 || obs.Fleet.Members[0].Image != "" || len(obs.Diagnostics) != 0 ||
		len(obs.Fleet.Images) != 1 || obs.Fleet.Images[0].Image != pinned || obs.Fleet.Images[0].MissingBytes != art.TotalBlobBytes()+art.Size {
		t.Fatalf("before: %+v", obs)
	}
	step := sdk.Step{ID: "image-sync:harness/pool-node-b", Kind: sdk.KindImageSync, ImageSync: &sdk.ImageSync{Member: m, Image: pinned, Digest: art.Digest.String()}}
	if resp := a.Apply(ctx, sdk.ApplyRequest{Step: step}, nil); resp.Diagnostics.HasErrors() || resp.Observed.Members[0].Image != pinned {
		t.Fatalf("apply: %+v", resp)
	}
	obs = a.Observe(ctx, sdk.ObserveRequest{})
	if len(obs.Fleet.Members) != 1 || obs.Fleet.Members[0].Image != pinned || len(obs.Diagnostics) != 0 {
		t.Fatalf("after: %+v", obs)
	}
	// A pin the source does not have: what the registry holds is still
	// told, without a byte count.
	m.Image = "elanous-harness@sha256:" + strings.Repeat("2", 64)
	if ds := configure(t, a, map[string]any{"source": "oci:" + dir}, m); ds.HasErrors() {
		t.Fatal(ds)
	}
	if obs = a.Observe(ctx, sdk.ObserveRequest{}); len(obs.Fleet.Members) != 1 || obs.Fleet.Members[0].Image != "" || obs.Diagnostics.HasErrors() || len(obs.Fleet.Images) != 0 {
		t.Fatalf("other pin: %+v", obs)
	}
}

// TestARegistryThatCannotBeReachedIsUnobserved: with nothing listening at
// a member's registry, Observe reports that registry unobserved
// (refused), not a registry without the image, which poolc would sync
// again; the other member's registry is observed.
func TestARegistryThatCannotBeReachedIsUnobserved(t *testing.T) {
	dir := writeLayout(t, imageOf(t, layers(t, 1, 1<<10), nil), nil)
	reg := newTestRegistry(t)
	_, port, _ := net.SplitHostPort(reg.addr())
	_, gone, _ := net.SplitHostPort(deadaddr.TCP(t))
	members := []sdk.Member{
		{PodPool: "harness", Context: "up", Registry: "k3d-lab-registry:" + port, Image: "elanous-harness"},
		{PodPool: "harness", Context: "gone", Registry: "k3d-lab-registry:" + gone, Image: "elanous-harness"},
	}
	a := NewActuator("test")
	if ds := configure(t, a, map[string]any{"source": "oci:" + dir, "build": "ci-7"}, members...); ds.HasErrors() {
		t.Fatal(ds)
	}
	obs := a.Observe(context.Background(), sdk.ObserveRequest{})
	u := obs.Fleet.Unobserved
	if len(u) != 1 || u[0].Kind != sdk.TargetRegistry || u[0].Context != "gone" || u[0].Cause != sdk.CauseRefused ||
		len(obs.Fleet.Members) != 1 || obs.Fleet.Members[0].Context != "up" || len(obs.Diagnostics) != 0 {
		t.Errorf("Observe with one registry gone: %+v", obs)
	}
}
