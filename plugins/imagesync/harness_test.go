package imagesync

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// testRegistry is go-containerregistry's in-memory registry on a loopback
// port, counting what clients upload.
type testRegistry struct {
	srv *httptest.Server
	// uploadBytes counts the bytes of blob upload bodies (PATCH and PUT
	// under /blobs/uploads/); blobUploads the uploads completed (a PUT
	// with ?digest=); manifestPuts the manifest PUTs.
	uploadBytes  atomic.Int64
	blobUploads  atomic.Int64
	manifestPuts atomic.Int64

	mu sync.Mutex
	// rewrite, when set, replaces the response to a request.
	rewrite func(w http.ResponseWriter, r *http.Request) bool
	// inflight counts requests in flight per repository; maxRepos is the
	// most repositories with a request in flight at once.
	inflight map[string]int
	maxRepos int
}

func newTestRegistry(t testing.TB) *testRegistry {
	t.Helper()
	tr := &testRegistry{inflight: map[string]int{}}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	tr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		repo := repoOf(r.URL.Path)
		tr.mu.Lock()
		rewrite := tr.rewrite
		if repo != "" {
			tr.inflight[repo]++
			if n := len(tr.inflight); n > tr.maxRepos {
				tr.maxRepos = n
			}
		}
		tr.mu.Unlock()
		defer func() {
			if repo == "" {
				return
			}
			tr.mu.Lock()
			if tr.inflight[repo]--; tr.inflight[repo] == 0 {
				delete(tr.inflight, repo)
			}
			tr.mu.Unlock()
		}()
		if rewrite != nil && rewrite(w, r) {
			return
		}
		switch {
		case strings.Contains(r.URL.Path, "/blobs/uploads/") && (r.Method == http.MethodPatch || r.Method == http.MethodPut):
			r.Body = countBody{r.Body, &tr.uploadBytes}
			if r.Method == http.MethodPut && r.URL.Query().Get("digest") != "" {
				tr.blobUploads.Add(1)
			}
		case strings.Contains(r.URL.Path, "/manifests/") && r.Method == http.MethodPut:
			tr.manifestPuts.Add(1)
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(tr.srv.Close)
	return tr
}

// addr is the registry's 127.0.0.1:PORT.
func (tr *testRegistry) addr() string { return tr.srv.Listener.Addr().String() }

// dest is a destination reaching the registry directly.
func (tr *testRegistry) dest(member, repo string) Destination {
	return Destination{Member: member, Registry: tr.addr(), Repository: repo}
}

func (tr *testRegistry) reset() {
	tr.uploadBytes.Store(0)
	tr.blobUploads.Store(0)
	tr.manifestPuts.Store(0)
}

// repoOf returns the repository of a /v2/REPO/{blobs,manifests}/... path.
func repoOf(path string) string {
	rest, ok := strings.CutPrefix(path, "/v2/")
	if !ok {
		return ""
	}
	for _, k := range []string{"/blobs/", "/manifests/", "/tags/"} {
		if i := strings.Index(rest, k); i >= 0 {
			return rest[:i]
		}
	}
	return ""
}

type countBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countBody) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// countingConn counts the bytes a client writes to a connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// layers returns n random gzip layers of size bytes each.
func layers(t testing.TB, n int, size int64) []v1.Layer {
	t.Helper()
	ls := make([]v1.Layer, n)
	for i := range ls {
		l, err := random.Layer(size, types.DockerLayer)
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
	}
	return ls
}

// imageOf stacks layers into an image for platform (nil for none).
func imageOf(t testing.TB, ls []v1.Layer, platform *v1.Platform) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, ls...)
	if err != nil {
		t.Fatal(err)
	}
	if platform != nil {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = platform.OS, platform.Architecture
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

// artifactOf loads img as an Artifact through an OCI layout.
func artifactOf(t testing.TB, img v1.Image) *Artifact {
	t.Helper()
	dir := writeLayout(t, img, nil)
	a, err := Load(context.Background(), Source{Kind: SourceOCILayout, Path: dir}, SourceTransport{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustDigest(t testing.TB, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func mustSize(t testing.TB, d interface{ Size() (int64, error) }) int64 {
	t.Helper()
	n, err := d.Size()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
