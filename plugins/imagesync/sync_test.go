package imagesync

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// writeLayout writes an OCI layout holding img or idx (one of them).
func writeLayout(t testing.TB, img v1.Image, idx v1.ImageIndex) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if img != nil {
		err = p.AppendImage(img)
	} else {
		err = p.AppendIndex(idx)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSyncSendsOnlyMissingBlobs(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	dest := reg.dest("pool-node-b", "harness")
	base := layers(t, 4, 256<<10)
	art := artifactOf(t, imageOf(t, base, nil))
	if len(art.Blobs) != 5 {
		t.Fatalf("artifact has %d blobs, want 4 layers and a config", len(art.Blobs))
	}

	// First sync: everything is missing.
	p, err := Inspect(ctx, art, dest)
	if err != nil {
		t.Fatal(err)
	}
	if p.Held || p.Count(BlobUpload) != 5 || p.UploadBytes() != art.TotalBlobBytes() {
		t.Fatalf("plan on an empty registry: held %v, %d uploads of %d bytes; want 5 of %d", p.Held, p.Count(BlobUpload), p.UploadBytes(), art.TotalBlobBytes())
	}
	var last Progress
	var reports int
	monotonic := true
	res := Sync(ctx, art, dest, Options{Progress: func(pr Progress) {
		reports++
		monotonic = monotonic && pr.Sent >= last.Sent && pr.Total == p.BytesToSend()
		last = pr
	}})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.Digest != art.Digest || res.BlobsSent != 5 || res.BytesSent != p.BytesToSend() {
		t.Errorf("first sync: %+v; want digest %s, 5 blobs, %d bytes", res, art.Digest, p.BytesToSend())
	}
	if got := reg.uploadBytes.Load(); got != art.TotalBlobBytes() {
		t.Errorf("first sync: registry received %d blob bytes, want %d", got, art.TotalBlobBytes())
	}
	if reg.blobUploads.Load() != 5 {
		t.Errorf("first sync: %d blob uploads, want 5", reg.blobUploads.Load())
	}
	if !last.Done || last.Sent != last.Total || last.Total != p.BytesToSend() {
		t.Errorf("final progress %+v, want Done with Sent == Total == %d", last, p.BytesToSend())
	}
	// At the start, at most once per percent, and at the end.
	if !monotonic || reports < 3 || reports > 102 {
		t.Errorf("%d progress reports (monotonic %v), want 3 to 102 in order", reports, monotonic)
	}
	wantTag := "sha256-" + art.Digest.Hex
	if res.Tag != wantTag || res.Reference != reg.addr()+"/harness@"+art.Digest.String() {
		t.Errorf("tag %q, reference %q", res.Tag, res.Reference)
	}
	for _, ref := range []string{res.Reference, reg.addr() + "/harness:" + wantTag} {
		r, _ := name.ParseReference(ref)
		d, err := remote.Head(r)
		if err != nil || d.Digest != art.Digest {
			t.Errorf("registry serves %s as %v, %v; want %s", ref, d, err, art.Digest)
		}
	}

	// Second sync: nothing moves.
	reg.reset()
	p, err = Inspect(ctx, art, dest)
	if err != nil || !p.Held || p.BytesToSend() != 0 {
		t.Fatalf("plan after sync: held %v, %d bytes, %v", p.Held, p.BytesToSend(), err)
	}
	res = Sync(ctx, art, dest, Options{})
	if res.Err != nil || res.BytesSent != 0 || res.BlobsSent != 0 || res.Digest != art.Digest {
		t.Fatalf("second sync: %+v", res)
	}
	if reg.uploadBytes.Load() != 0 || reg.blobUploads.Load() != 0 || reg.manifestPuts.Load() != 0 {
		t.Errorf("second sync moved %d bytes, %d blobs, %d manifests; want none", reg.uploadBytes.Load(), reg.blobUploads.Load(), reg.manifestPuts.Load())
	}

	// One layer changed: only it and the new config move.
	changed := append(append([]v1.Layer{}, base[:3]...), layers(t, 1, 256<<10)...)
	img2 := imageOf(t, changed, nil)
	art2 := artifactOf(t, img2)
	cfg, _ := partial.ConfigLayer(img2)
	want := mustSize(t, changed[3]) + mustSize(t, cfg)
	reg.reset()
	p, err = Inspect(ctx, art2, dest)
	if err != nil || p.Count(BlobUpload) != 2 || p.Count(BlobPresent) != 3 || p.UploadBytes() != want {
		t.Fatalf("plan after a layer change: %d uploads of %d bytes, %d present, %v; want 2 of %d, 3", p.Count(BlobUpload), p.UploadBytes(), p.Count(BlobPresent), err, want)
	}
	res = Sync(ctx, art2, dest, Options{})
	if res.Err != nil || res.BlobsSent != 2 || res.BlobsPresent != 3 || res.Digest != art2.Digest {
		t.Fatalf("sync after a layer change: %+v", res)
	}
	if got := reg.uploadBytes.Load(); got != want || reg.blobUploads.Load() != 2 {
		t.Errorf("a changed layer moved %d bytes in %d blobs, want %d in 2", got, reg.blobUploads.Load(), want)
	}
}

func TestSyncMultiArchIndexWhole(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	shared := layers(t, 1, 64<<10)
	amd := imageOf(t, append(shared, layers(t, 1, 32<<10)...), &v1.Platform{OS: "linux", Architecture: "amd64"})
	arm := imageOf(t, append(shared, layers(t, 1, 32<<10)...), &v1.Platform{OS: "linux", Architecture: "arm64"})
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
	)
	art, err := Load(ctx, Source{Kind: SourceOCILayout, Path: writeLayout(t, nil, idx)}, SourceTransport{})
	if err != nil {
		t.Fatal(err)
	}
	if art.Digest != mustDigest(t, idx) || !art.MediaType.IsIndex() || len(art.Manifests) != 3 {
		t.Fatalf("loaded %s (%s) with %d manifests; want the index %s and two images", art.Digest, art.MediaType, len(art.Manifests), mustDigest(t, idx))
	}
	// The shared layer is sent once: 1 shared + 2 own layers + 2 configs.
	res := Sync(ctx, art, reg.dest("mac", "harness"), Options{})
	if res.Err != nil || res.BlobsSent != 5 || reg.blobUploads.Load() != 5 || reg.manifestPuts.Load() != 4 {
		t.Fatalf("sync: %+v; %d blob uploads, %d manifest puts; want 5 blobs and 3 manifests plus the tag", res, reg.blobUploads.Load(), reg.manifestPuts.Load())
	}
	ref, _ := name.ParseReference(res.Reference)
	for _, want := range []struct {
		arch string
		img  v1.Image
	}{{"amd64", amd}, {"arm64", arm}} {
		got, err := remote.Image(ref, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: want.arch}))
		if err != nil {
			t.Fatal(err)
		}
		if mustDigest(t, got) != mustDigest(t, want.img) {
			t.Errorf("%s: registry serves %s, want %s", want.arch, mustDigest(t, got), mustDigest(t, want.img))
		}
	}
}

func TestLoadDockerArchiveAndRegistrySources(t *testing.T) {
	ctx := context.Background()
	img := imageOf(t, layers(t, 2, 32<<10), nil)

	tar := filepath.Join(t.TempDir(), "harness.tar")
	tag, _ := name.NewTag("elanous-harness:build-7")
	if err := tarball.WriteToFile(tar, tag, img); err != nil {
		t.Fatal(err)
	}
	src, err := ParseSource("docker-archive:" + tar)
	if err != nil {
		t.Fatal(err)
	}
	fromTar, err := Load(ctx, src, SourceTransport{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fromTar.Blobs) != 3 || fromTar.Digest != mustDigest(t, img) {
		t.Errorf("docker-archive: %d blobs, digest %s; want 3, %s", len(fromTar.Blobs), fromTar.Digest, mustDigest(t, img))
	}
	if _, err := Load(ctx, Source{Kind: SourceDockerArchive, Path: tar, Ref: "other:tag"}, SourceTransport{}); err == nil {
		t.Error("docker-archive with a tag it does not hold loaded")
	}

	// A registry source: the image pushed to one registry, synced to
	// another.
	srcReg, dstReg := newTestRegistry(t), newTestRegistry(t)
	ref, _ := name.ParseReference(srcReg.addr() + "/ci/harness:build-7")
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	src, err = ParseSource("registry:" + ref.String())
	if err != nil {
		t.Fatal(err)
	}
	fromReg, err := Load(ctx, src, SourceTransport{})
	if err != nil {
		t.Fatal(err)
	}
	res := Sync(ctx, fromReg, dstReg.dest("node-c", "harness"), Options{Build: "build-7"})
	if res.Err != nil || res.Digest != mustDigest(t, img) || res.Tag != "build-7-"+res.Digest.Hex[:12] {
		t.Fatalf("sync from a registry: %+v", res)
	}
	if dstReg.uploadBytes.Load() != fromReg.TotalBlobBytes() {
		t.Errorf("sent %d blob bytes, want %d", dstReg.uploadBytes.Load(), fromReg.TotalBlobBytes())
	}
}

func TestSyncThroughTunnel(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	var dials, written atomic.Int64
	dest := Destination{
		Member: "pool-node-b",
		// A name nothing resolves: every connection must go through
		// the tunnel.
		Registry:   "k3d-poolc-registry.invalid:5051",
		Repository: "harness",
		Tunnel: func(ctx context.Context) (net.Conn, error) {
			dials.Add(1)
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", reg.addr())
			return countingConn{c, &written}, err
		},
	}
	art := artifactOf(t, imageOf(t, layers(t, 3, 512<<10), nil))
	res := Sync(ctx, art, dest, Options{})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if dials.Load() == 0 {
		t.Fatal("the tunnel was never used")
	}
	// What crossed the tunnel is the blobs and manifests plus HTTP
	// framing: within 2%.
	want := res.BytesSent
	if got := written.Load(); got < want || float64(got) > 1.02*float64(want) {
		t.Errorf("%d bytes through the tunnel for %d bytes of content", got, want)
	}
	if res.Reference != "k3d-poolc-registry.invalid:5051/harness@"+art.Digest.String() {
		t.Errorf("reference %q", res.Reference)
	}

	// A direct destination with that name cannot be reached.
	direct := dest
	direct.Tunnel = nil
	if res := Sync(ctx, art, direct, Options{}); res.Err == nil {
		t.Error("sync without the tunnel reached an unresolvable registry")
	}
}

func TestConcurrentSyncsOfOneImageAgree(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	art := artifactOf(t, imageOf(t, layers(t, 4, 128<<10), nil))
	var wg sync.WaitGroup
	results := make([]Result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = Sync(ctx, art, reg.dest("pool-node-b", "harness"), Options{Build: "ci-42"})
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.Err != nil || r.Digest != art.Digest || r.Tag != results[0].Tag {
			t.Errorf("apply %d: %+v", i, r)
		}
	}
}

func TestTagNeverMoves(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	art := artifactOf(t, imageOf(t, layers(t, 2, 16<<10), nil))
	tag, err := ImmutableTag("ci-42", art.Digest)
	if err != nil {
		t.Fatal(err)
	}
	// Another image already holds the tag.
	other := imageOf(t, layers(t, 1, 16<<10), nil)
	ref, _ := name.NewTag(reg.addr() + "/harness:" + tag)
	if err := remote.Write(ref, other); err != nil {
		t.Fatal(err)
	}
	res := Sync(ctx, art, reg.dest("pool-node-b", "harness"), Options{Build: "ci-42"})
	var tce *TagConflictError
	if !errors.As(res.Err, &tce) || Retryable(res.Err) {
		t.Fatalf("sync onto a tag of another image: %v (retryable %v)", res.Err, Retryable(res.Err))
	}
	if !strings.Contains(res.Err.Error(), "immutable") || !strings.Contains(res.Err.Error(), mustDigest(t, other).String()) {
		t.Errorf("message %q", res.Err)
	}
	if d, err := remote.Head(ref); err != nil || d.Digest != mustDigest(t, other) {
		t.Errorf("the tag moved to %v (%v)", d, err)
	}
}

func TestVerifyMismatchFailsAndTagsNothing(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	art := artifactOf(t, imageOf(t, layers(t, 2, 16<<10), nil))
	decoy := artifactOf(t, imageOf(t, layers(t, 1, 16<<10), nil))
	// The registry serves other bytes under the image's digest.
	reg.rewrite = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/manifests/"+art.Digest.String()) {
			return false
		}
		w.Header().Set("Content-Type", string(types.DockerManifestSchema2))
		w.Write(decoy.Manifests[0].Raw)
		return true
	}
	res := Sync(ctx, art, reg.dest("pool-node-b", "harness"), Options{})
	var ve *VerifyError
	if !errors.As(res.Err, &ve) || ve.Got != decoy.Digest.String() || Retryable(res.Err) {
		t.Fatalf("sync with a registry serving other bytes: %v", res.Err)
	}
	ref, _ := name.NewTag(reg.addr() + "/harness:" + res.Tag)
	if _, err := remote.Head(ref); err == nil {
		t.Error("a manifest that failed verification was tagged")
	}
}

func TestPinnedDigestRefusesOtherSource(t *testing.T) {
	reg := newTestRegistry(t)
	art := artifactOf(t, imageOf(t, layers(t, 1, 1024), nil))
	res := Sync(context.Background(), art, reg.dest("m", "harness"), Options{Want: "sha256:" + strings.Repeat("0", 64)})
	var pe *PinError
	if !errors.As(res.Err, &pe) || Retryable(res.Err) || reg.blobUploads.Load() != 0 {
		t.Fatalf("pin mismatch: %v, %d uploads", res.Err, reg.blobUploads.Load())
	}
}

func TestLayoutPicksNamedManifest(t *testing.T) {
	ctx := context.Background()
	a, b := imageOf(t, layers(t, 1, 1024), nil), imageOf(t, layers(t, 1, 1024), nil)
	dir := writeLayout(t, a, nil)
	p, _ := layout.FromPath(dir)
	if err := p.AppendImage(b, layout.WithAnnotations(map[string]string{refNameAnnotation: "harness-b"})); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, Source{Kind: SourceOCILayout, Path: dir}, SourceTransport{}); err == nil || !strings.Contains(err.Error(), "#NAME") {
		t.Errorf("two manifests without a name: %v", err)
	}
	got, err := Load(ctx, Source{Kind: SourceOCILayout, Path: dir, Ref: "harness-b"}, SourceTransport{})
	if err != nil || got.Digest != mustDigest(t, b) {
		t.Errorf("named manifest: %v, %v", got, err)
	}
	if _, err := Load(ctx, Source{Kind: SourceOCILayout, Path: filepath.Join(dir, "missing")}, SourceTransport{}); err == nil {
		t.Error("a missing layout loaded")
	}
}

func TestObserveHoldingsAndBytesToMove(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	dest := reg.dest("pool-node-b", "harness")
	old := artifactOf(t, imageOf(t, layers(t, 2, 32<<10), nil))
	cur := artifactOf(t, imageOf(t, layers(t, 2, 32<<10), nil))
	if res := Sync(ctx, old, dest, Options{}); res.Err != nil {
		t.Fatal(res.Err)
	}
	st, err := Observe(ctx, cur, dest, []v1.Hash{old.Digest, cur.Digest})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := Inspect(ctx, cur, dest)
	if !st.Holding(old.Digest) || st.Holding(cur.Digest) || st.BlobsToMove != 3 || st.BytesToMove != p.BytesToSend() || st.BytesToMove < cur.TotalBlobBytes() {
		t.Errorf("before the sync: %+v (plan %d bytes, blobs %d)", st, p.BytesToSend(), cur.TotalBlobBytes())
	}
	if res := Sync(ctx, cur, dest, Options{}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if st, err = Observe(ctx, cur, dest, nil); err != nil || !st.Holding(cur.Digest) || st.BytesToMove != 0 {
		t.Errorf("after the sync: %+v, %v", st, err)
	}
	if reg.manifestPuts.Load() != 4 {
		t.Errorf("%d manifest puts for two syncs, want 4 (observing writes nothing)", reg.manifestPuts.Load())
	}
}
