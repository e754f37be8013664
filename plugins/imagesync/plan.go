package imagesync

import (
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// BlobAction is what a sync does with one blob at one destination.
type BlobAction int

// The blob actions.
const (
	// BlobPresent: the repository already has it; nothing moves.
	BlobPresent BlobAction = iota
	// BlobMount: another repository of the registry has it; it is
	// mounted (a request without the bytes).
	BlobMount
	// BlobUpload: the registry lacks it; its bytes are sent.
	BlobUpload
)

// BlobPlan is the action for one blob; From is the repository a mount
// takes it from.
type BlobPlan struct {
	Blob   Blob
	Action BlobAction
	From   string
}

// Plan is what a sync of an artifact to a destination would do, found by
// HEAD requests alone. Held says the repository already serves the root
// manifest by digest (the tag may still be missing).
type Plan struct {
	Member string
	Held   bool
	Blobs  []BlobPlan
	// Manifests lists the manifests to put, children first.
	Manifests []Manifest
}

// UploadBytes returns the bytes of the blobs to send.
func (p Plan) UploadBytes() int64 {
	var n int64
	for _, b := range p.Blobs {
		if b.Action == BlobUpload {
			n += b.Blob.Size
		}
	}
	return n
}

// BytesToSend returns what a sync sends: the blobs to upload and the
// manifests to put.
func (p Plan) BytesToSend() int64 {
	n := p.UploadBytes()
	for _, m := range p.Manifests {
		n += int64(len(m.Raw))
	}
	return n
}

// Count returns how many blobs take action a.
func (p Plan) Count(a BlobAction) int {
	n := 0
	for _, b := range p.Blobs {
		if b.Action == a {
			n++
		}
	}
	return n
}

func (t *target) plan(ctx context.Context, art *Artifact) (Plan, error) {
	p := Plan{Member: t.dest.Member}
	held, err := t.hasManifest(ctx, art.Digest)
	if err != nil {
		return Plan{}, fmt.Errorf("member %s: %w", t.dest.Member, err)
	}
	p.Held = held
	if held {
		// A registry accepts a manifest only once what it names is
		// there: everything below the root is present.
		for _, b := range art.Blobs {
			p.Blobs = append(p.Blobs, BlobPlan{Blob: b, Action: BlobPresent})
		}
		return p, nil
	}
	for _, m := range art.Manifests {
		ok, err := t.hasManifest(ctx, m.Digest)
		if err != nil {
			return Plan{}, fmt.Errorf("member %s: %w", t.dest.Member, err)
		}
		if !ok {
			p.Manifests = append(p.Manifests, m)
		}
	}
	for _, b := range art.Blobs {
		action, from, err := t.blobAction(ctx, b.Digest)
		if err != nil {
			return Plan{}, fmt.Errorf("member %s: %w", t.dest.Member, err)
		}
		p.Blobs = append(p.Blobs, BlobPlan{Blob: b, Action: action, From: from})
	}
	return p, nil
}

// blobAction finds where the registry has blob d: in the repository, in
// one to mount from, or nowhere.
func (t *target) blobAction(ctx context.Context, d v1.Hash) (BlobAction, string, error) {
	ok, err := t.hasBlob(ctx, "", d)
	if err != nil || ok {
		return BlobPresent, "", err
	}
	for _, repo := range t.dest.MountFrom {
		if repo == t.repo.RepositoryStr() {
			continue
		}
		ok, err := t.hasBlob(ctx, repo, d)
		if err != nil {
			return 0, "", err
		}
		if ok {
			return BlobMount, repo, nil
		}
	}
	return BlobUpload, "", nil
}
