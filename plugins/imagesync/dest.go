package imagesync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Destination is one member's registry and the repository the image goes
// to. Registry is HOST[:PORT] as image references name it (a k3d
// registry's k3d-NAME:PORT); with Tunnel set every connection to it is
// opened by Tunnel instead of the network (an SSH direct-tcpip channel to
// the registry's port on the member's host), and a redirect to any other
// host is refused. TLS selects https (a k3d registry speaks plain HTTP).
// MountFrom lists other repositories of the same registry that may hold
// the image's blobs: a blob found there is mounted, not sent.
type Destination struct {
	Member     string
	Registry   string
	Repository string
	Tunnel     func(ctx context.Context) (net.Conn, error)
	TLS        bool
	MountFrom  []string
}

// Reference returns REGISTRY/REPOSITORY@DIGEST, how the member's pods
// name the image.
func (d Destination) Reference(digest v1.Hash) string {
	return d.Registry + "/" + d.Repository + "@" + digest.String()
}

// target is a Destination connected: its repository name and the clients
// that speak to it.
type target struct {
	dest   Destination
	repo   name.Repository
	base   *http.Transport
	client *http.Client // authenticated for push and pull on repo
	pusher *remote.Pusher
}

// connect checks d, pings the registry and returns clients for it. jobs
// bounds the pusher's concurrent uploads.
func (d Destination) connect(ctx context.Context, jobs int) (*target, error) {
	var opts []name.Option
	if !d.TLS {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(d.Registry+"/"+d.Repository, opts...)
	if err != nil {
		return nil, fmt.Errorf("member %s: registry %q, repository %q: %w", d.Member, d.Registry, d.Repository, err)
	}
	if d.Tunnel != nil {
		// Open one tunnel first, so an unreachable or refused host
		// (a host key that does not match) fails with its own error
		// instead of inside the registry handshake's attempts.
		c, err := d.Tunnel(ctx)
		if err != nil {
			return nil, err
		}
		c.Close()
	}
	base := d.transport(repo.Registry)
	rt, err := transport.NewWithContext(ctx, repo.Registry, authn.Anonymous, base, []string{repo.Scope(transport.PushScope)})
	if err != nil {
		return nil, err
	}
	pusher, err := remote.NewPusher(
		remote.WithTransport(base),
		remote.WithAuth(authn.Anonymous),
		remote.WithJobs(jobs),
		// One owner of the retry policy: a failed attempt fails the
		// step (as retryable when it may pass later) and the runner
		// decides whether to try again.
		remote.WithRetryPredicate(func(error) bool { return false }),
	)
	if err != nil {
		return nil, err
	}
	return &target{dest: d, repo: repo, base: base, client: &http.Client{Transport: rt}, pusher: pusher}, nil
}

// close closes the target's idle connections (and so its tunnels).
func (t *target) close() { t.base.CloseIdleConnections() }

// transport returns the HTTP transport to reg: direct, or every
// connection through the tunnel.
func (d Destination) transport(reg name.Registry) *http.Transport {
	t := boundedTransport()
	if d.Tunnel == nil {
		t.DialContext = (&net.Dialer{Timeout: dialTimeout}).DialContext
		return t
	}
	want := hostPort(reg)
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !strings.EqualFold(addr, want) {
			return nil, fmt.Errorf("member %s: the registry sent the client to %s, which the tunnel to %s does not reach", d.Member, addr, want)
		}
		return d.Tunnel(ctx)
	}
	return t
}

// hostPort returns the host:port connections to reg go to, with the
// scheme's default port when the name has none.
func hostPort(reg name.Registry) string {
	host := reg.RegistryStr()
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	if reg.Scheme() == "https" {
		return net.JoinHostPort(host, "443")
	}
	return net.JoinHostPort(host, "80")
}

// manifestAccept lists every manifest media type a registry may serve.
var manifestAccept = strings.Join([]string{
	string(types.OCIImageIndex), string(types.OCIManifestSchema1),
	string(types.DockerManifestList), string(types.DockerManifestSchema2),
}, ",")

// served fetches the manifest the registry serves under ref (a tag or a
// digest) and returns the digest of its bytes, as computed here; found is
// false when the registry has none. A Docker-Content-Digest header that
// disagrees with the bytes is a VerifyError.
//
// A registry answering 5xx is asked again, a few times: the filesystem
// store of the reference registry answers 500 ("invalid checksum digest
// format") while another client pushes the same manifest, until that push
// has written its link.
func (t *target) served(ctx context.Context, ref string) (digest v1.Hash, found bool, err error) {
	wait := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		digest, found, err = t.servedOnce(ctx, ref)
		var terr *transport.Error
		if attempt == servedAttempts || !errors.As(err, &terr) || terr.StatusCode < 500 {
			return digest, found, err
		}
		select {
		case <-ctx.Done():
			return digest, found, err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// servedAttempts is how many times served asks a registry that answers
// 5xx.
const servedAttempts = 5

func (t *target) servedOnce(ctx context.Context, ref string) (digest v1.Hash, found bool, err error) {
	u := fmt.Sprintf("%s://%s/v2/%s/manifests/%s", t.repo.Scheme(), t.repo.RegistryStr(), t.repo.RepositoryStr(), ref)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return v1.Hash{}, false, err
	}
	req.Header.Set("Accept", manifestAccept)
	resp, err := t.client.Do(req)
	if err != nil {
		return v1.Hash{}, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return v1.Hash{}, false, nil
	}
	if err := transport.CheckError(resp, http.StatusOK); err != nil {
		return v1.Hash{}, false, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(resp.Body, maxManifestBytes)); err != nil {
		return v1.Hash{}, false, err
	}
	got := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}
	if hdr := resp.Header.Get("Docker-Content-Digest"); hdr != "" && hdr != got.String() {
		return v1.Hash{}, false, &VerifyError{Member: t.dest.Member, Ref: ref, Want: got.String(), Got: hdr, What: "the Docker-Content-Digest header disagrees with the manifest's bytes"}
	}
	return got, true, nil
}

// maxManifestBytes bounds a manifest read back (registries refuse larger).
const maxManifestBytes = 4 << 20

// hasBlob reports whether repo (the target's own when "") serves the blob.
func (t *target) hasBlob(ctx context.Context, repo string, d v1.Hash) (bool, error) {
	return t.head(ctx, repo, "blobs", d.String())
}

// hasManifest reports whether the target's repository serves the manifest.
func (t *target) hasManifest(ctx context.Context, d v1.Hash) (bool, error) {
	return t.head(ctx, "", "manifests", d.String())
}

func (t *target) head(ctx context.Context, repo, kind, ref string) (bool, error) {
	if repo == "" {
		repo = t.repo.RepositoryStr()
	}
	u := fmt.Sprintf("%s://%s/v2/%s/%s/%s", t.repo.Scheme(), t.repo.RegistryStr(), repo, kind, ref)
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
	if err != nil {
		return false, err
	}
	if kind == "manifests" {
		req.Header.Set("Accept", manifestAccept)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	if err := transport.CheckError(resp, http.StatusOK, http.StatusNotFound); err != nil {
		return false, err
	}
	return resp.StatusCode == http.StatusOK, nil
}
