package imagesync

import (
	"context"
	"fmt"
	"net"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"poolc.dev/poolc/internal/sshx"
)

// Status is what one member's registry holds: of the pool's images asked
// about, the digests its repository serves, and what a sync of the
// artifact would move there (zero when it is held).
type Status struct {
	Member      string
	Holds       []v1.Hash
	BytesToMove int64
	BlobsToMove int
}

// Holding reports whether the status lists digest d as served.
func (s Status) Holding(d v1.Hash) bool {
	for _, h := range s.Holds {
		if h == d {
			return true
		}
	}
	return false
}

// Observe asks dest which of digests (and art's own digest, when art is
// set) its repository serves and, for art, the bytes and blobs a sync
// would send. It writes nothing.
func Observe(ctx context.Context, art *Artifact, dest Destination, digests []v1.Hash) (Status, error) {
	st := Status{Member: dest.Member}
	t, err := dest.connect(ctx, DefaultJobs)
	if err != nil {
		return st, fmt.Errorf("member %s: %w", dest.Member, err)
	}
	defer t.close()
	asked := map[v1.Hash]bool{}
	for _, d := range digests {
		if asked[d] {
			continue
		}
		asked[d] = true
		ok, err := t.hasManifest(ctx, d)
		if err != nil {
			return st, fmt.Errorf("member %s: %w", dest.Member, err)
		}
		if ok {
			st.Holds = append(st.Holds, d)
		}
	}
	if art == nil {
		return st, nil
	}
	p, err := t.plan(ctx, art)
	if err != nil {
		return st, err
	}
	if p.Held && !asked[art.Digest] {
		st.Holds = append(st.Holds, art.Digest)
	}
	st.BytesToMove = p.BytesToSend()
	st.BlobsToMove = p.Count(BlobUpload)
	return st, nil
}

// SSHTunnel returns a Destination.Tunnel that opens a direct-tcpip channel
// through c to addr as the member's host resolves it (the registry's port
// on that host, e.g. "127.0.0.1:5051"). The host's key is verified by c's
// pool against its known_hosts file.
func SSHTunnel(c *sshx.Client, addr string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) { return c.Dial(ctx, "tcp", addr) }
}
