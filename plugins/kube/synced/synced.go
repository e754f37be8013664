// Package synced hands a pod pool's Jobs the copy of its image that each
// member's registry serves, as the pool's state records it after an
// image-sync (REGISTRY/REPOSITORY@DIGEST), instead of the image as the
// configuration gives it: a Job then runs exactly the digest that was
// synced and verified, from the member's own registry, however the tag
// has moved since.
package synced

import (
	"fmt"

	"poolc.dev/poolc/plugins/kube"
	"poolc.dev/poolc/pools"
)

// WithCopies sets, on each of members that has a registry, the copy of
// image that registry serves according to fleet
// (pools.MemberState.RegistryImage): the copy an image-sync verified
// there, read back from the registry. A member the fleet does not record
// as holding image gets no copy but the reason (ImageCopy.Unverified),
// and takes no Job of image; a member without a registry keeps none, and
// its Jobs run image as given.
func WithCopies(members []kube.Member, image string, fleet pools.Fleet) []kube.Member {
	out := make([]kube.Member, len(members))
	for i, m := range members {
		out[i] = m
		if m.Registry == "" {
			continue
		}
		c := kube.ImageCopy{From: image, Unverified: fmt.Sprintf("the state records no member %s (run poolc apply)", m.Context)}
		for _, s := range fleet.Members {
			if s.PodPool != m.Pool || s.Context != m.Context {
				continue
			}
			switch to := s.RegistryImage(image); {
			case to != "":
				c = kube.ImageCopy{From: image, To: to}
			case s.Registry != m.Registry:
				c.Unverified = fmt.Sprintf("no image-sync has verified %s in registry %s yet (run poolc apply)", image, m.Registry)
			case s.Image == "":
				c.Unverified = fmt.Sprintf("no image-sync has verified %s in registry %s (run poolc apply; the last sync there failed or never ran)", image, m.Registry)
			default:
				c.Unverified = fmt.Sprintf("registry %s holds %s, verified by the last sync, not %s (run poolc apply)", m.Registry, s.Image, image)
			}
		}
		out[i].Image = c
	}
	return out
}
