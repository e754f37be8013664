package imagesync

import (
	"errors"
	"fmt"
	"strings"
)

// SourceKind says where a Source reads its image from.
type SourceKind string

// The kinds of source, as they prefix a source string.
const (
	// SourceRegistry is an image reference in a registry:
	// "registry:HOST/REPO:TAG" or "registry:HOST/REPO@sha256:...".
	SourceRegistry SourceKind = "registry"
	// SourceOCILayout is an OCI image layout directory: "oci:DIR", or
	// "oci:DIR#NAME" to pick the manifest whose
	// org.opencontainers.image.ref.name annotation is NAME.
	SourceOCILayout SourceKind = "oci"
	// SourceDockerArchive is a `docker save` tarball: "docker-archive:FILE",
	// or "docker-archive:FILE#REPO:TAG" to pick one image of several.
	SourceDockerArchive SourceKind = "docker-archive"
)

// Source names an image to sync. Path is the directory or file of a layout
// or archive; Ref is the registry reference, or the name picking one image
// in a layout or archive ("" when it holds exactly one).
type Source struct {
	Kind SourceKind
	Path string
	Ref  string
}

// String returns the source in the form ParseSource reads.
func (s Source) String() string {
	switch s.Kind {
	case SourceRegistry:
		return string(s.Kind) + ":" + s.Ref
	default:
		if s.Ref == "" {
			return string(s.Kind) + ":" + s.Path
		}
		return string(s.Kind) + ":" + s.Path + "#" + s.Ref
	}
}

// errSourceForm is the message naming every accepted form of a source.
var errSourceForm = errors.New(`want "registry:REF", "oci:DIR[#NAME]" or "docker-archive:FILE[#REPO:TAG]"`)

// ParseSource reads a source string: KIND:LOCATION as the SourceKind
// constants describe. A string with no known kind prefix is an error, so a
// path is never mistaken for a registry reference.
func ParseSource(s string) (Source, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Source{}, fmt.Errorf("image source %q: %w", s, errSourceForm)
	}
	if strings.ContainsAny(s, "\x00\n\r") {
		return Source{}, fmt.Errorf("image source %q: control characters", s)
	}
	switch SourceKind(kind) {
	case SourceRegistry:
		if rest == "" {
			return Source{}, fmt.Errorf("image source %q: empty reference", s)
		}
		if _, err := parseReference(rest); err != nil {
			return Source{}, fmt.Errorf("image source %q: %w", s, err)
		}
		return Source{Kind: SourceRegistry, Ref: rest}, nil
	case SourceOCILayout, SourceDockerArchive:
		path, ref, _ := strings.Cut(rest, "#")
		if path == "" {
			return Source{}, fmt.Errorf("image source %q: empty path", s)
		}
		if SourceKind(kind) == SourceDockerArchive && ref != "" {
			if _, err := parseTag(ref); err != nil {
				return Source{}, fmt.Errorf("image source %q: %w", s, err)
			}
		}
		return Source{Kind: SourceKind(kind), Path: path, Ref: ref}, nil
	default:
		return Source{}, fmt.Errorf("image source %q: unknown kind %q: %w", s, kind, errSourceForm)
	}
}
