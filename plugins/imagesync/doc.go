// Package imagesync copies a container image to the registries of a pod
// pool's members, sending only the blobs a registry lacks, and proves what
// arrived.
//
// An image comes from a Source: a registry reference, a local OCI layout
// directory or a `docker save` tarball. Load reads it into an Artifact: the
// root manifest (an image, or a multi-arch index) with every child manifest
// and blob it needs, identified by digest. A Destination is one member's
// registry and repository, reached directly or through a tunnel (an SSH
// direct-tcpip channel to the registry's port on the member's host).
//
// Inspect asks a destination which of the artifact's blobs it already has
// (HEAD requests, nothing is written) and how many bytes a sync would move.
// Sync uploads only the missing blobs (mounting from another repository of
// the same registry when one holds them), puts the manifests whole, children
// before the index, by digest, reads the root manifest back and compares its
// digest, and only then tags it with an immutable tag derived from the
// build or the content digest. A tag that already names another digest is
// refused, never moved; two syncs of the same image racing to one registry
// both succeed and agree. The Actuator serves poolc's image-sync steps,
// several members at once, bounded.
package imagesync
