package pools

import (
	"fmt"
	"regexp"
	"strings"
)

// ImageSatisfies reports whether a member whose registry holds have
// (as recorded: NAME@DIGEST once synced) has the image want asks for:
// the same reference, or, for a want that pins no digest (a tag), want
// as synced at some digest (want@DIGEST). Whether that digest is still
// what the tag names is the image-sync plugin's to observe: a refresh
// reports the member without the image when it is not.
func ImageSatisfies(have, want string) bool {
	if have == want {
		return true
	}
	return ImageDigest(want) == "" && ImageDigest(have) != "" && strings.TrimSuffix(have, "@"+ImageDigest(have)) == want
}

// ImageDigest is the digest an image reference pins (NAME@sha256:...), or
// "" when it pins none.
func ImageDigest(image string) string {
	if i := strings.LastIndex(image, "@"); i >= 0 {
		return image[i+1:]
	}
	return ""
}

// ImageName returns image without its digest: NAME or NAME:TAG.
func ImageName(image string) string {
	if i := strings.LastIndex(image, "@"); i >= 0 {
		return image[:i]
	}
	return image
}

// repositoryPattern is the grammar of a repository path: lower-case
// components separated by '/', each joined by '.', '_', '__' or dashes.
var repositoryPattern = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)

// ImageRepository returns the repository a pod pool's image goes to in a
// member's registry: its path without a registry host, tag or digest
// ("elanous-harness", "org/harness" for "ghcr.example/org/harness:1").
func ImageRepository(image string) (string, error) {
	s := ImageName(image)
	if i := strings.LastIndex(s, ":"); i > strings.LastIndex(s, "/") {
		s = s[:i]
	}
	if rest, ok := StripImageRegistry(s); ok {
		s = rest
	}
	if !repositoryPattern.MatchString(s) {
		return "", fmt.Errorf("image %q does not name a repository", image)
	}
	return s, nil
}

// StripImageRegistry reports whether image's first component is a
// registry host (it has a '.' or a ':', or is localhost) and returns the
// rest.
func StripImageRegistry(image string) (rest string, ok bool) {
	first, rest, ok := strings.Cut(image, "/")
	if !ok || !(strings.ContainsAny(first, ".:") || first == "localhost") {
		return "", false
	}
	return rest, true
}

// RegistryImage is where a Job on the member finds the pod pool's image
// want: the copy an image-sync pushed to the member's registry,
// REGISTRY/REPOSITORY@DIGEST, when the member has a registry and its
// recorded image (NAME@DIGEST once synced) is want (ImageSatisfies).
// It is "" otherwise: the Job runs want as given.
func (m MemberState) RegistryImage(want string) string {
	d := ImageDigest(m.Image)
	if m.Registry == "" || d == "" || !ImageSatisfies(m.Image, want) {
		return ""
	}
	repo, err := ImageRepository(m.Image)
	if err != nil {
		return ""
	}
	return m.Registry + "/" + repo + "@" + d
}
