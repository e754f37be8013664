package imagesync

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"poolc.dev/poolc/plugins/sdk"
)

// plainRegistry serves go-containerregistry's registry over plain HTTP
// on a loopback address other than 127.0.0.1 (which the client would
// take as plain HTTP by itself), counting the blob GETs it answers.
type plainRegistry struct {
	srv      *httptest.Server
	blobGets atomic.Int64
}

func newPlainRegistry(t *testing.T, ip string) *plainRegistry {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listen on %s (any 127.0.0.0/8 address is loopback on Linux): %v", ip, err)
	}
	pr := &plainRegistry{}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	pr.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/sha256:") {
			pr.blobGets.Add(1)
		}
		reg.ServeHTTP(w, r)
	})}}
	pr.srv.Start()
	t.Cleanup(pr.srv.Close)
	return pr
}

// A registry source works with refresh on: Observe loads the source (and
// the plugin keeps it) under a context that ends when Observe returns;
// the sync after it reads every blob from the source under its own
// context. The source is a plain-HTTP registry on 127.0.0.5, allowed by
// name in the config's registries; without that entry it is refused, and
// Observe says so (naming the setting), never dropping the bytes to send
// silently.
func TestARegistrySourceSyncsAfterObserveOverAllowedPlainHTTP(t *testing.T) {
	src := newPlainRegistry(t, "127.0.0.5")
	srcHost := src.srv.Listener.Addr().String()
	img := imageOf(t, layers(t, 3, 32<<10), nil)
	ref, err := name.ParseReference(srcHost+"/harness:v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	digest := mustDigest(t, img)
	dest := newTestRegistry(t)
	_, port, _ := net.SplitHostPort(dest.addr())
	member := sdk.Member{PodPool: "harness", Context: "pool-node-b", Registry: "k3d-lab-registry:" + port, Image: "harness:v1"}
	cfg := map[string]any{"source": "registry:" + srcHost + "/harness:v1", "registries": map[string]any{srcHost: map[string]any{"plain_http": true}}}

	a := NewActuator("test")
	if ds := configure(t, a, cfg, member); ds.HasErrors() {
		t.Fatal(ds)
	}
	octx, cancel := context.WithCancel(context.Background())
	obs := a.Observe(octx, sdk.ObserveRequest{})
	cancel() // as poolc's refresh ends before the apply
	if len(obs.Diagnostics) != 0 || len(obs.Fleet.Images) != 1 || obs.Fleet.Images[0].Digest != digest.String() || obs.Fleet.Images[0].MissingBytes == 0 {
		t.Fatalf("observe: %+v", obs)
	}
	step := sdk.Step{ID: "image-sync:harness/pool-node-b", Kind: sdk.KindImageSync, Target: "harness/pool-node-b",
		ImageSync: &sdk.ImageSync{Member: member, Image: "harness:v1@" + digest.String(), Digest: digest.String()}}
	var last sdk.Progress
	resp := a.Apply(context.Background(), sdk.ApplyRequest{Step: step}, func(p sdk.Progress) { last = p })
	if resp.Diagnostics.HasErrors() || resp.Observed == nil || resp.Observed.Members[0].Image != "harness:v1@"+digest.String() {
		t.Fatalf("apply after observe: %+v", resp)
	}
	// The first sync sends the whole image, blobs and manifests: the
	// bytes it reports are the image's, not more.
	if m := regexp.MustCompile(`\((\d+) bytes of the image's (\d+)\)`).FindStringSubmatch(last.Message); m == nil || m[1] != m[2] {
		t.Errorf("last progress %q, want as many bytes sent as the image holds", last.Message)
	}
	if got := src.blobGets.Load(); got != 4 {
		t.Errorf("the source answered %d blob GETs, want 4 (the config and 3 layers)", got)
	}

	// The same registry, not named as plain HTTP: refused, and said.
	delete(cfg, "registries")
	b := NewActuator("test")
	if ds := configure(t, b, cfg, member); ds.HasErrors() {
		t.Fatal(ds)
	}
	obs = b.Observe(context.Background(), sdk.ObserveRequest{})
	if len(obs.Diagnostics) != 1 || !strings.Contains(obs.Diagnostics[0].Summary, "plain_http = true") {
		t.Fatalf("observe without plain_http: %+v, want one diagnostic naming plain_http", obs.Diagnostics)
	}
	if resp := b.Apply(context.Background(), sdk.ApplyRequest{Step: step}, nil); !resp.Diagnostics.HasErrors() {
		t.Errorf("apply without plain_http: %+v, want refused", resp)
	}
	// A pool pinning the digest: what the member's registry holds is
	// still reported, and the unreadable source is a warning.
	member.Image = "harness:v1@" + digest.String()
	c := NewActuator("test")
	if ds := configure(t, c, cfg, member); ds.HasErrors() {
		t.Fatal(ds)
	}
	obs = c.Observe(context.Background(), sdk.ObserveRequest{})
	if len(obs.Fleet.Members) != 1 || len(obs.Diagnostics) != 1 || !strings.Contains(obs.Diagnostics[0].Summary, "bytes an image-sync sends are unknown") ||
		!strings.Contains(obs.Diagnostics[0].Summary, "plain_http = true") {
		t.Fatalf("observe of a pinned image without plain_http: %+v", obs)
	}
}

// A member's registry that lost the image (its manifest deleted after the
// sync) is seen by the next Observe: the member is reported without the
// image, so the refresh records none and poolc plans a sync again, and
// the bytes to send are the manifests again.
func TestARegistryThatLostTheImageIsSeen(t *testing.T) {
	ctx := context.Background()
	dir := writeLayout(t, imageOf(t, layers(t, 2, 16<<10), nil), nil)
	dest := newTestRegistry(t)
	_, port, _ := net.SplitHostPort(dest.addr())
	member := sdk.Member{PodPool: "harness", Context: "pool-node-b", Registry: "k3d-lab-registry:" + port, Image: "harness"}
	a := NewActuator("test")
	if ds := configure(t, a, map[string]any{"source": "oci:" + dir}, member); ds.HasErrors() {
		t.Fatal(ds)
	}
	step := sdk.Step{ID: "image-sync:harness/pool-node-b", Kind: sdk.KindImageSync, ImageSync: &sdk.ImageSync{Member: member, Image: "harness"}}
	resp := a.Apply(ctx, sdk.ApplyRequest{Step: step}, nil)
	if resp.Diagnostics.HasErrors() {
		t.Fatal(resp.Diagnostics)
	}
	got := resp.Observed.Members[0].Image
	if obs := a.Observe(ctx, sdk.ObserveRequest{}); len(obs.Fleet.Members) != 1 || obs.Fleet.Members[0].Image != got {
		t.Fatalf("observe after the sync: %+v, want %s", obs.Fleet, got)
	}
	_, digest, _ := strings.Cut(got, "@")
	req, _ := http.NewRequest(http.MethodDelete, "http://"+dest.addr()+"/v2/harness/manifests/"+digest, nil)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode/100 != 2 {
		t.Fatalf("delete the manifest: %v %v", r, err)
	}
	obs := a.Observe(ctx, sdk.ObserveRequest{})
	if len(obs.Fleet.Members) != 1 || obs.Fleet.Members[0].Image != "" || len(obs.Fleet.Images) != 1 || obs.Fleet.Images[0].MissingBytes == 0 {
		t.Errorf("observe after the registry lost the image: %+v, want the member without it and bytes to send", obs.Fleet)
	}
}
