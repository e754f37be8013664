//go:build e2e

package imagesync

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"

	"poolc.dev/poolc/internal/sshx"
	"poolc.dev/poolc/internal/testing/syncbuf"
	"poolc.dev/poolc/internal/testing/testsshd"
)

// missingRegistry says how to get the registry these tests run.
const missingRegistry = "docker-registry not found: apt-get install docker-registry (or bash .ci/install.d/registry.sh)"

// distribution is Debian's docker-registry (distribution 2.8) serving a
// temporary directory on a loopback port, with no auth.
type distribution struct {
	host string // the loopback address it listens on
	port int
	dir  string
	log  *syncbuf.Buffer
}

// startDistribution runs the registry on a free port of 127.0.0.1. The
// port is chosen free and then handed to the registry, so another process
// may take it in between: a registry that exits saying so is started
// again on another.
func startDistribution(t testing.TB) *distribution { return startDistributionOn(t, "127.0.0.1") }

// startDistributionOn runs the registry on a free port of host, a
// loopback address, as startDistribution does.
func startDistributionOn(t testing.TB, host string) *distribution {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		t.Fatal(missingRegistry)
	}
	for attempt := 1; ; attempt++ {
		d := &distribution{host: host, dir: t.TempDir(), log: &syncbuf.Buffer{}}
		if d.start(t, bin) {
			return d
		}
		if attempt == 5 || !strings.Contains(d.log.String(), "address already in use") {
			t.Fatalf("docker-registry exited: %s", d.log)
		}
	}
}

// start runs the registry and waits until it answers; it reports false
// when the registry exited first.
func (d *distribution) start(t testing.TB, bin string) bool {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(d.host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	d.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
  secret: poolc-e2e-not-a-secret
`, filepath.Join(d.dir, "data"), d.addr())
	cfgFile := filepath.Join(d.dir, "config.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cfgFile)
	cmd.Stdout, cmd.Stderr = d.log, d.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(d.url("/v2/"))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		select {
		case <-exited:
			return false
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("docker-registry did not answer on %s: %v\n%s", d.addr(), err, d.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// addr is the registry's HOST:PORT.
func (d *distribution) addr() string { return net.JoinHostPort(d.host, strconv.Itoa(d.port)) }

// url is a URL of the registry reached directly, for checks only; syncs
// reach it through the tunnel.
func (d *distribution) url(path string) string { return "http://" + d.addr() + path }

// serves reports whether the registry answers 200 to a HEAD of a
// manifest, asked directly.
func (d *distribution) serves(t *testing.T, repo, ref string) bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodHead, d.url("/v2/"+repo+"/manifests/"+ref), nil)
	req.Header.Set("Accept", manifestAccept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// tunnelled is a member whose registry is reachable only through sshd.
type tunnelled struct {
	srv     *testsshd.Server
	reg     *distribution
	pool    *sshx.Pool
	written atomic.Int64 // bytes the client wrote into tunnels
	dials   atomic.Int64
}

// newTunnelled starts sshd and the registry; known, when set, returns the
// known_hosts file the client checks sshd's key against (default: one
// listing sshd's key).
func newTunnelled(t testing.TB, known func(*testsshd.Server) string) *tunnelled {
	t.Helper()
	tu := &tunnelled{srv: testsshd.Start(t), reg: startDistribution(t)}
	cfg := tu.srv.ClientConfig()
	if known != nil {
		cfg.KnownHostsFile = known(tu.srv)
	}
	p, err := sshx.NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	tu.pool = p
	return tu
}

func (tu *tunnelled) dest(repo string) Destination {
	open := SSHTunnel(tu.pool.Client(tu.srv.Endpoint()), "127.0.0.1:"+strconv.Itoa(tu.reg.port))
	return Destination{
		Member: "pool-node-b",
		// The in-cluster name of a k3d registry: it resolves nowhere
		// here, so nothing reaches it but the tunnel.
		Registry:   "k3d-poolc-e2e-registry.invalid:" + strconv.Itoa(tu.reg.port),
		Repository: repo,
		Tunnel: func(ctx context.Context) (net.Conn, error) {
			tu.dials.Add(1)
			c, err := open(ctx)
			if err != nil {
				return nil, err
			}
			return countingConn{c, &tu.written}, nil
		},
	}
}

func TestE2ESyncThroughSSHOnlyMissingLayers(t *testing.T) {
	ctx := context.Background()
	tu := newTunnelled(t, nil)
	dest := tu.dest("elanous-harness")
	base := layers(t, 4, 1<<20)
	art := artifactOf(t, imageOf(t, base, nil))

	res := Sync(ctx, art, dest, Options{Build: "ci-1"})
	if res.Err != nil {
		t.Fatalf("%v\nsshd: %s\nregistry: %s", res.Err, tu.srv.Log(), tu.reg.log)
	}
	first := tu.written.Load()
	t.Logf("first sync: %d blobs, %d content bytes, %d bytes through the tunnel, %d tunnel dials", res.BlobsSent, res.BytesSent, first, tu.dials.Load())
	if res.Digest != art.Digest || res.BlobsSent != 5 || !tu.reg.serves(t, "elanous-harness", art.Digest.String()) || !tu.reg.serves(t, "elanous-harness", res.Tag) {
		t.Fatalf("first sync: %+v", res)
	}

	tu.written.Store(0)
	res = Sync(ctx, art, dest, Options{Build: "ci-1"})
	if res.Err != nil || res.BlobsSent != 0 || res.BytesSent != 0 {
		t.Fatalf("second sync: %+v", res)
	}
	t.Logf("second sync: 0 blobs, %d bytes through the tunnel (HEADs and GETs)", tu.written.Load())

	// One layer of four changed.
	changed := append(append([]v1.Layer{}, base[:3]...), layers(t, 1, 1<<20)...)
	img2 := imageOf(t, changed, nil)
	art2 := artifactOf(t, img2)
	cfg, _ := partial.ConfigLayer(img2)
	want := mustSize(t, changed[3]) + mustSize(t, cfg) + int64(len(art2.Manifests[0].Raw))
	tu.written.Store(0)
	res = Sync(ctx, art2, dest, Options{Build: "ci-2"})
	if res.Err != nil || res.BlobsSent != 2 || res.BlobsPresent != 3 {
		t.Fatalf("sync of a one-layer change: %+v", res)
	}
	got := tu.written.Load()
	t.Logf("one-layer change: %d bytes through the tunnel for a %d-byte layer, config and manifest (%d); full image %d", got, want, res.BytesSent, art2.TotalBlobBytes())
	if float64(got) < float64(want) || float64(got) > 1.05*float64(want) {
		t.Errorf("%d bytes through the tunnel, want within 5%% of %d", got, want)
	}
}

func TestE2EMultiArchIndexAndCrossRepoMount(t *testing.T) {
	ctx := context.Background()
	tu := newTunnelled(t, nil)
	amd := imageOf(t, layers(t, 2, 256<<10), &v1.Platform{OS: "linux", Architecture: "amd64"})
	arm := imageOf(t, layers(t, 2, 256<<10), &v1.Platform{OS: "linux", Architecture: "arm64"})
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
	)
	art, err := Load(ctx, Source{Kind: SourceOCILayout, Path: writeLayout(t, nil, idx)}, SourceTransport{})
	if err != nil {
		t.Fatal(err)
	}
	res := Sync(ctx, art, tu.dest("harness-a"), Options{})
	if res.Err != nil {
		t.Fatalf("%v\n%s", res.Err, tu.reg.log)
	}
	for _, d := range []v1.Hash{art.Digest, mustDigest(t, amd), mustDigest(t, arm)} {
		if !tu.reg.serves(t, "harness-a", d.String()) {
			t.Errorf("the registry does not serve %s", d)
		}
	}
	// The same image into a second repository of the registry: every
	// blob is mounted from the first, none sent.
	b := tu.dest("harness-b")
	b.MountFrom = []string{"harness-a"}
	p, err := Inspect(ctx, art, b)
	if err != nil || p.Count(BlobMount) != 6 || p.UploadBytes() != 0 {
		t.Fatalf("plan into a second repository: %d mounts, %d upload bytes, %v", p.Count(BlobMount), p.UploadBytes(), err)
	}
	tu.written.Store(0)
	res = Sync(ctx, art, b, Options{})
	if res.Err != nil || res.BlobsMounted != 6 || res.BlobsSent != 0 || !tu.reg.serves(t, "harness-b", art.Digest.String()) {
		t.Fatalf("mounted sync: %+v", res)
	}
	if w := tu.written.Load(); w > art.TotalBlobBytes()/10 {
		t.Errorf("%d bytes through the tunnel for a mounted image of %d blob bytes", w, art.TotalBlobBytes())
	}
	t.Logf("mounted sync: %d blobs mounted, %d bytes through the tunnel (image %d blob bytes)", res.BlobsMounted, tu.written.Load(), art.TotalBlobBytes())
}

func TestE2EWrongHostKeyRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	other := testsshd.NewKey(t, filepath.Join(dir, "other"))
	known := filepath.Join(dir, "known_hosts")
	// Changed: known_hosts holds another key for sshd's address.
	tu := newTunnelled(t, func(srv *testsshd.Server) string {
		os.WriteFile(known, []byte(srv.KnownHostsLine(other)+"\n"), 0o600)
		return known
	})
	art := artifactOf(t, imageOf(t, layers(t, 1, 64<<10), nil))
	res := Sync(ctx, art, tu.dest("harness"), Options{})
	var hke *sshx.HostKeyError
	if !errors.As(res.Err, &hke) || Retryable(res.Err) || !strings.Contains(res.Err.Error(), "CHANGED") {
		t.Fatalf("changed host key: %v (retryable %v)", res.Err, Retryable(res.Err))
	}
	t.Logf("changed key: %v", res.Err)
	if tu.written.Load() != 0 {
		t.Errorf("%d bytes went into a tunnel to a refused host", tu.written.Load())
	}

	// Unknown: an empty known_hosts.
	os.WriteFile(known, nil, 0o600)
	res = Sync(ctx, art, tu.dest("harness"), Options{})
	if !errors.As(res.Err, &hke) || !strings.Contains(res.Err.Error(), "unknown") {
		t.Fatalf("unknown host key: %v", res.Err)
	}
	if tu.reg.serves(t, "harness", art.Digest.String()) {
		t.Error("the image reached the registry of a refused host")
	}
}

func TestE2ETunnelCutMidPushIsRetryable(t *testing.T) {
	ctx := context.Background()
	tu := newTunnelled(t, nil)
	art := artifactOf(t, imageOf(t, layers(t, 3, 8<<20), nil))
	dest := tu.dest("harness")
	var once sync.Once
	var killed int
	res := Sync(ctx, art, dest, Options{Jobs: 1, Progress: func(p Progress) {
		if p.Sent > p.Total/3 {
			once.Do(func() { killed = tu.srv.KillSessions(t) })
		}
	}})
	if killed == 0 {
		t.Fatalf("the tunnel was never cut: %+v", res)
	}
	if res.Err == nil || !Retryable(res.Err) {
		t.Fatalf("cut mid-push: err %v, retryable %v", res.Err, Retryable(res.Err))
	}
	t.Logf("cut after a third: %v", res.Err)
	if tu.reg.serves(t, "harness", art.Digest.String()) || tu.reg.serves(t, "harness", "sha256-"+art.Digest.Hex) {
		t.Fatal("a half-pushed image is served")
	}
	res = Sync(ctx, art, dest, Options{Jobs: 1})
	if res.Err != nil || res.Digest != art.Digest || !tu.reg.serves(t, "harness", res.Tag) {
		t.Fatalf("retry: %+v", res)
	}
	t.Logf("retry: %d blobs sent, %d already there", res.BlobsSent, res.BlobsPresent)
}

func TestE2ETwoAppliesPushingOneImageAgree(t *testing.T) {
	ctx := context.Background()
	tu := newTunnelled(t, nil)
	art := artifactOf(t, imageOf(t, layers(t, 4, 1<<20), nil))
	// Two applies, each with its own SSH connections, push the same
	// image to the same registry at once.
	second, err := sshx.NewPool(tu.srv.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	a := tu.dest("harness")
	b := a
	b.Tunnel = SSHTunnel(second.Client(tu.srv.Endpoint()), "127.0.0.1:"+strconv.Itoa(tu.reg.port))
	results := make([]Result, 2)
	var wg sync.WaitGroup
	for i, d := range []Destination{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = Sync(ctx, art, d, Options{Build: "ci-9"})
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.Err != nil || r.Digest != art.Digest || r.Tag != results[0].Tag {
			t.Errorf("apply %d: %+v\n%s", i, r, tu.reg.log)
		}
	}
	if !tu.reg.serves(t, "harness", results[0].Tag) {
		t.Error("the tag is not served")
	}
	t.Logf("two applies: %d and %d blobs sent, both %s", results[0].BlobsSent, results[1].BlobsSent, results[0].Digest)
}

// BenchmarkE2ESyncThroughSSH syncs through a real sshd's tunnel to
// Debian's docker-registry, a new repository for every sync (the
// registry keeps blobs per repository, so a new one holds none).
func BenchmarkE2ESyncThroughSSH(b *testing.B) {
	tu := newTunnelled(b, nil)
	n := 0
	benchSync(b, func(b *testing.B) Destination {
		n++
		return tu.dest(fmt.Sprintf("bench-%d", n))
	})
}
