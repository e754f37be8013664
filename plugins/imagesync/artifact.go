package imagesync

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Artifact is a loaded image: its root manifest (an image or an index) and,
// children first, every manifest and blob a registry needs to serve it.
// Blobs and manifests are listed once each, however many images share them.
type Artifact struct {
	// Digest, MediaType and Size describe the root manifest.
	Digest    v1.Hash
	MediaType types.MediaType
	Size      int64
	// Manifests lists the root and its descendants, each after its
	// children, so putting them in order never names a missing manifest.
	Manifests []Manifest
	// Blobs lists the configs and layers of every image, once each.
	Blobs []Blob
	// fetch, for a registry source, reads a blob from the source under
	// the context of the request that sends it; nil for a source on disk,
	// whose blobs' Layers are read directly.
	fetch func(context.Context, v1.Hash) (v1.Layer, error)
}

// Manifest is one image manifest or index, exactly as its bytes are.
type Manifest struct {
	Digest    v1.Hash
	MediaType types.MediaType
	Raw       []byte
}

// Blob is a config or layer of the artifact, with the layer it was found
// as (read its bytes through Artifact.Open).
type Blob struct {
	Digest v1.Hash
	Size   int64
	Layer  v1.Layer
}

// Open returns the layer to read blob b's bytes from. A registry source's
// blob is fetched under ctx, the context of the request that reads it,
// not that of the Load that found it (which may have ended: the plugin
// loads an artifact once, in whichever call needs it first).
func (a *Artifact) Open(ctx context.Context, b Blob) (v1.Layer, error) {
	if a.fetch == nil {
		return b.Layer, nil
	}
	return a.fetch(ctx, b.Digest)
}

// TotalBytes returns the size of every blob and manifest: what a sync to
// an empty registry sends.
func (a *Artifact) TotalBytes() int64 {
	n := a.TotalBlobBytes()
	for _, m := range a.Manifests {
		n += int64(len(m.Raw))
	}
	return n
}

// TotalBlobBytes returns the size of every blob: what a sync to an empty
// registry moves, besides manifests.
func (a *Artifact) TotalBlobBytes() int64 {
	var n int64
	for _, b := range a.Blobs {
		n += b.Size
	}
	return n
}

// Load reads src into an Artifact. A layout or archive is read from disk;
// a registry source is resolved to its manifests through t, and its blobs
// are fetched only when a sync sends them, each under its own request's
// context (Open). ctx bounds the Load alone.
func Load(ctx context.Context, src Source, t SourceTransport) (*Artifact, error) {
	a := &Artifact{}
	root, err := open(ctx, src, t, a)
	if err != nil {
		return nil, fmt.Errorf("image source %s: %w", src, err)
	}
	w := walker{a: a, seenBlob: map[v1.Hash]bool{}, seenManifest: map[v1.Hash]bool{}}
	if err := w.add(root); err != nil {
		return nil, fmt.Errorf("image source %s: %w", src, err)
	}
	last := a.Manifests[len(a.Manifests)-1]
	a.Digest, a.MediaType, a.Size = last.Digest, last.MediaType, int64(len(last.Raw))
	return a, nil
}

// open returns the root of src: a v1.Image or a v1.ImageIndex; for a
// registry source it sets a's fetch.
func open(ctx context.Context, src Source, t SourceTransport, a *Artifact) (partial.Describable, error) {
	switch src.Kind {
	case SourceRegistry:
		var opts []name.Option
		if t.PlainHTTP {
			opts = append(opts, name.Insecure)
		}
		ref, err := name.ParseReference(src.Ref, opts...)
		if err != nil {
			return nil, err
		}
		puller, err := remote.NewPuller(remote.WithTransport(t.roundTripper()))
		if err != nil {
			return nil, err
		}
		desc, err := puller.Get(ctx, ref)
		if err != nil {
			return nil, sourceHint(err, ref.Context().RegistryStr())
		}
		repo := ref.Context()
		a.fetch = func(ctx context.Context, d v1.Hash) (v1.Layer, error) {
			return puller.Layer(ctx, repo.Digest(d.String()))
		}
		if desc.MediaType.IsIndex() {
			return desc.ImageIndex()
		}
		return desc.Image()
	case SourceOCILayout:
		idx, err := layout.ImageIndexFromPath(src.Path)
		if err != nil {
			return nil, err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		desc, err := pickLayoutManifest(im, src.Ref)
		if err != nil {
			return nil, err
		}
		if desc.MediaType.IsIndex() {
			return idx.ImageIndex(desc.Digest)
		}
		return idx.Image(desc.Digest)
	case SourceDockerArchive:
		var tag *name.Tag
		if src.Ref != "" {
			t, err := parseTag(src.Ref)
			if err != nil {
				return nil, err
			}
			tag = &t
		}
		return tarball.ImageFromPath(src.Path, tag)
	default:
		return nil, fmt.Errorf("unknown source kind %q", src.Kind)
	}
}

// refNameAnnotation names a manifest in an OCI layout's index.json.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// pickLayoutManifest returns the manifest of a layout's index named ref,
// or its only manifest when ref is "".
func pickLayoutManifest(im *v1.IndexManifest, ref string) (v1.Descriptor, error) {
	var names []string
	for _, d := range im.Manifests {
		n := d.Annotations[refNameAnnotation]
		if ref != "" && n == ref {
			return d, nil
		}
		names = append(names, fmt.Sprintf("%q", n))
	}
	switch {
	case ref == "" && len(im.Manifests) == 1:
		return im.Manifests[0], nil
	case len(im.Manifests) == 0:
		return v1.Descriptor{}, fmt.Errorf("the layout's index.json lists no manifest")
	case ref == "":
		return v1.Descriptor{}, fmt.Errorf("the layout holds %d manifests (%s); name one with #NAME", len(im.Manifests), strings.Join(names, ", "))
	default:
		return v1.Descriptor{}, fmt.Errorf("no manifest named %q in the layout (it has %s)", ref, strings.Join(names, ", "))
	}
}

// walker collects an artifact's manifests and blobs depth first.
type walker struct {
	a            *Artifact
	seenBlob     map[v1.Hash]bool
	seenManifest map[v1.Hash]bool
}

type rawManifester interface {
	partial.Describable
	RawManifest() ([]byte, error)
}

func (w *walker) add(node partial.Describable) error {
	m, ok := node.(rawManifester)
	if !ok {
		return fmt.Errorf("%T is not a manifest", node)
	}
	digest, err := m.Digest()
	if err != nil {
		return err
	}
	if w.seenManifest[digest] {
		return nil
	}
	w.seenManifest[digest] = true
	switch n := node.(type) {
	case v1.ImageIndex:
		im, err := n.IndexManifest()
		if err != nil {
			return err
		}
		for _, d := range im.Manifests {
			var child partial.Describable
			switch {
			case d.MediaType.IsIndex():
				child, err = n.ImageIndex(d.Digest)
			case d.MediaType.IsImage():
				child, err = n.Image(d.Digest)
			default:
				err = fmt.Errorf("index %s lists %s of media type %q, neither an image nor an index", digest, d.Digest, d.MediaType)
			}
			if err != nil {
				return err
			}
			if err := w.add(child); err != nil {
				return err
			}
		}
	case v1.Image:
		if err := w.addImageBlobs(n); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s is neither an image nor an index", digest)
	}
	raw, err := m.RawManifest()
	if err != nil {
		return err
	}
	mt, err := m.MediaType()
	if err != nil {
		return err
	}
	w.a.Manifests = append(w.a.Manifests, Manifest{Digest: digest, MediaType: mt, Raw: raw})
	return nil
}

func (w *walker) addImageBlobs(img v1.Image) error {
	cfg, err := partial.ConfigLayer(img)
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range append([]v1.Layer{cfg}, layers...) {
		mt, err := l.MediaType()
		if err != nil {
			return err
		}
		if !mt.IsDistributable() {
			continue // foreign layers are fetched by the runtime from their URLs
		}
		d, err := l.Digest()
		if err != nil {
			return err
		}
		if w.seenBlob[d] {
			continue
		}
		size, err := l.Size()
		if err != nil {
			return err
		}
		w.seenBlob[d] = true
		w.a.Blobs = append(w.a.Blobs, Blob{Digest: d, Size: size, Layer: l})
	}
	return nil
}

// parseReference reads a registry image reference.
func parseReference(s string) (name.Reference, error) { return name.ParseReference(s) }

// parseTag reads REPO:TAG.
func parseTag(s string) (name.Tag, error) { return name.NewTag(s) }
