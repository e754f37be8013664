package imagesync

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"

	"poolc.dev/poolc/internal/spelling"
)

// DefaultJobs is how many blobs one member receives at once unless
// Options.Jobs says otherwise.
const DefaultJobs = 4

// Options adjust a sync. Build, when set, names the build (a commit, a CI
// run) and goes into the immutable tag; Want, when set, is the digest the
// pool pins, and a source of another digest is refused. Progress, when
// set, receives each member's bytes to send and sent; it may be called
// from several goroutines at once.
type Options struct {
	Jobs     int
	Build    string
	Want     string
	Progress func(Progress)
}

func (o Options) withDefaults() Options {
	if o.Jobs <= 0 {
		o.Jobs = DefaultJobs
	}
	return o
}

// Progress reports one member's sync: Total bytes to send (blobs to upload
// and manifests to put), Sent so far, and Done once the pushed image is
// verified and tagged.
type Progress struct {
	Member string
	Total  int64
	Sent   int64
	Done   bool
}

// Result is the outcome of one member's sync. Digest is the digest the
// registry serves for the image, read back after the push; Reference is
// REGISTRY/REPOSITORY@DIGEST and Tag the immutable tag. BytesSent counts
// the blob and manifest bytes sent; the Blobs* fields count the blobs
// uploaded, mounted from another repository and already present.
type Result struct {
	Member       string
	Digest       v1.Hash
	Reference    string
	Tag          string
	BytesSent    int64
	BlobsSent    int
	BlobsMounted int
	BlobsPresent int
	Err          error
}

// buildSpelling is what a build name may be: it leads a tag and is
// followed by the digest, so it is shorter than a tag.
var buildSpelling = spelling.New("A-Za-z0-9_", "A-Za-z0-9._-", 1, 64)

// ImmutableTag returns the tag an image of digest d is pushed under:
// BUILD-HEX12 (the build's name and the first 12 hex digits of the
// digest) when build is set, sha256-HEX otherwise. It always carries the
// digest, so two different images never share a tag.
func ImmutableTag(build string, d v1.Hash) (string, error) {
	if d.Algorithm == "" || len(d.Hex) < 12 {
		return "", fmt.Errorf("digest %q is not a content digest", d)
	}
	if build == "" {
		return d.Algorithm + "-" + d.Hex, nil
	}
	if !buildSpelling.Allows(build) {
		return "", fmt.Errorf("build %q: want letters, digits, '.', '_' or '-', at most 64, not starting with '.' or '-'", build)
	}
	return build + "-" + d.Hex[:12], nil
}

// Sync copies art to dest: the blobs the registry lacks, then the
// manifests, children first, by digest; it reads the root manifest back
// and compares its digest, and only then tags it. An existing tag naming
// another digest is a TagConflictError: tags never move.
func Sync(ctx context.Context, art *Artifact, dest Destination, opts Options) Result {
	opts = opts.withDefaults()
	res := Result{Member: dest.Member}
	res.Err = sync1(ctx, art, dest, opts, &res)
	if res.Err != nil {
		res.Err = fmt.Errorf("member %s: %w", dest.Member, res.Err)
	}
	return res
}

func sync1(ctx context.Context, art *Artifact, dest Destination, opts Options, res *Result) error {
	if opts.Want != "" && opts.Want != art.Digest.String() {
		return &PinError{Want: opts.Want, Got: art.Digest.String()}
	}
	tag, err := ImmutableTag(opts.Build, art.Digest)
	if err != nil {
		return err
	}
	res.Tag = tag
	t, err := dest.connect(ctx, opts.Jobs)
	if err != nil {
		return err
	}
	defer t.close()
	p, err := t.plan(ctx, art)
	if err != nil {
		return err
	}
	m := &meter{member: dest.Member, total: p.BytesToSend(), fn: opts.Progress}
	defer func() { res.BytesSent = m.sent.Load() }()
	m.report(false)
	if err := t.sendBlobs(ctx, art, p, opts.Jobs, m.add); err != nil {
		return err
	}
	res.BlobsSent, res.BlobsMounted, res.BlobsPresent = p.Count(BlobUpload), p.Count(BlobMount), p.Count(BlobPresent)
	for _, mf := range p.Manifests {
		if err := t.pusher.Put(ctx, t.repo.Digest(mf.Digest.String()), putManifest{mf}); err != nil {
			return err
		}
		m.add(int64(len(mf.Raw)))
	}
	if err := t.verify(ctx, art.Digest.String(), art.Digest); err != nil {
		return err
	}
	if err := t.tag(ctx, tag, art); err != nil {
		return err
	}
	res.Digest = art.Digest
	res.Reference = dest.Reference(art.Digest)
	m.report(true)
	return nil
}

// meter counts one member's bytes sent and reports them in order, at the
// start, at most once per percent of the total, and at the end.
type meter struct {
	member string
	total  int64
	fn     func(Progress)
	sent   atomic.Int64

	mu       sync.Mutex
	reported int64 // sent at the last report
}

func (m *meter) add(n int64) {
	sent := m.sent.Add(n)
	if m.fn == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if sent <= m.reported || (sent-m.reported < m.total/100 && sent < m.total) {
		return
	}
	m.reported = sent
	m.fn(Progress{Member: m.member, Total: m.total, Sent: sent})
}

func (m *meter) report(done bool) {
	if m.fn == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reported = m.sent.Load()
	m.fn(Progress{Member: m.member, Total: m.total, Sent: m.reported, Done: done})
}

// sendBlobs uploads or mounts the plan's missing blobs, jobs at a time,
// counting the bytes read for upload.
func (t *target) sendBlobs(ctx context.Context, art *Artifact, p Plan, jobs int, counted func(int64)) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(jobs)
	for _, bp := range p.Blobs {
		if bp.Action == BlobPresent {
			continue
		}
		g.Go(func() error {
			src, err := art.Open(gctx, bp.Blob)
			if err != nil {
				return fmt.Errorf("blob %s: %w", bp.Blob.Digest, err)
			}
			var l v1.Layer = countedLayer{Layer: src, counted: counted}
			if bp.Action == BlobMount {
				from := t.repo.Registry.Repo(bp.From).Digest(bp.Blob.Digest.String())
				l = &remote.MountableLayer{Layer: l, Reference: from}
			}
			if err := t.pusher.Upload(gctx, t.repo, l); err != nil {
				return fmt.Errorf("blob %s: %w", bp.Blob.Digest, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// verify reads back what the registry serves under ref and compares its
// digest with the artifact's.
func (t *target) verify(ctx context.Context, ref string, want v1.Hash) error {
	got, found, err := t.served(ctx, ref)
	if err != nil {
		return err
	}
	if !found {
		return &VerifyError{Member: t.dest.Member, Ref: ref, Want: want.String(), What: "the registry serves nothing under it after the push"}
	}
	if got != want {
		return &VerifyError{Member: t.dest.Member, Ref: ref, Want: want.String(), Got: got.String(), What: "the registry serves another manifest"}
	}
	return nil
}

// tag points tag at art's root manifest unless it already does; a tag
// naming another digest is refused. The tag is read back and verified.
func (t *target) tag(ctx context.Context, tag string, art *Artifact) error {
	have, found, err := t.served(ctx, tag)
	if err != nil {
		return err
	}
	if found && have != art.Digest {
		return &TagConflictError{Member: t.dest.Member, Repository: t.repo.String(), Tag: tag, Want: art.Digest.String(), Have: have.String()}
	}
	if !found {
		root := art.Manifests[len(art.Manifests)-1]
		if err := t.pusher.Put(ctx, t.repo.Tag(tag), putManifest{root}); err != nil {
			return err
		}
	}
	return t.verify(ctx, tag, art.Digest)
}

// putManifest is a Manifest as remote.Pusher.Put takes it.
type putManifest struct{ m Manifest }

func (p putManifest) RawManifest() ([]byte, error)        { return p.m.Raw, nil }
func (p putManifest) MediaType() (types.MediaType, error) { return p.m.MediaType, nil }

// countedLayer counts the compressed bytes read from a layer as they are
// sent.
type countedLayer struct {
	v1.Layer
	counted func(int64)
}

func (l countedLayer) Compressed() (io.ReadCloser, error) {
	rc, err := l.Layer.Compressed()
	if err != nil {
		return nil, err
	}
	return &countingReader{rc: rc, counted: l.counted}, nil
}

type countingReader struct {
	rc      io.ReadCloser
	counted func(int64)
}

func (r *countingReader) Read(b []byte) (int, error) {
	n, err := r.rc.Read(b)
	if n > 0 {
		r.counted(int64(n))
	}
	return n, err
}

func (r *countingReader) Close() error { return r.rc.Close() }
