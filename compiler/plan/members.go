package plan

import (
	"fmt"
	"sort"
	"strings"

	"poolc.dev/poolc/pools"
)

// podPools lays out the steps of the pod pools' members: a member that
// joins, changes or leaves, and the image a member's registry needs.
type podPools struct {
	*draft
}

// Leaving lists the members current holds that desired does not, in key
// order: each is planned as a member-remove, and each must be observed
// (by its pod pool's cluster plugin) for the plan to see it at all.
func Leaving(desired, current pools.Fleet) []pools.MemberState {
	want := make(map[string]bool, len(desired.Members))
	for _, m := range desired.Members {
		want[m.Key()] = true
	}
	var out []pools.MemberState
	for _, m := range current.Members {
		if !want[m.Key()] {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// membersByKey indexes a fleet's members by their key (the first of a
// key).
func membersByKey(f pools.Fleet) map[string]*pools.MemberState {
	out := make(map[string]*pools.MemberState, len(f.Members))
	for i := range f.Members {
		if k := f.Members[i].Key(); out[k] == nil {
			out[k] = &f.Members[i]
		}
	}
	return out
}

func (p *podPools) members() {
	for _, c := range Leaving(p.des, p.cur) {
		p.add(pools.Step{ID: "member-remove:" + c.Key(), Kind: pools.StepMemberRemove, Target: c.Key(), Member: &c,
			Reason:   fmt.Sprintf("because %s is no longer a member of pod_pool %s", c.Context, c.PodPool),
			Estimate: pools.Estimate{Seconds: MemberSeconds}})
	}
	names := make([]string, 0, len(p.des.Members))
	for _, m := range p.des.Members {
		names = append(names, m.Key())
	}
	sort.Strings(names)
	cur, des := membersByKey(p.cur), membersByKey(p.des)
	for _, key := range names {
		c, d := cur[key], des[key]
		switch {
		case c == nil || *c != *d:
			// A member-ensure records no image of its own: the member
			// keeps the image a sync verified in the same registry, or
			// none, until an image-sync verifies the new one.
			// A member whose pool copies no image there records none.
			m := *d
			m.Image = ""
			if c != nil && c.Registry == d.Registry && d.Image != "" {
				m.Image = c.Image
			}
			image, estimate := p.image(*d)
			held := c != nil && c.Registry == d.Registry && pools.ImageSatisfies(c.Image, image)
			var ensure *pools.Step
			needsSync := d.Registry != "" && d.Image != "" && !held
			if c == nil || !sameExceptImage(*c, *d) || !needsSync && m.Image != c.Image {
				ensure = p.add(pools.Step{ID: "member-ensure:" + key, Kind: pools.StepMemberEnsure, Target: key, Member: &m,
					Reason: memberReason(c, *d), Estimate: pools.Estimate{Seconds: MemberSeconds}})
			}
			if needsSync {
				sm := *d
				sm.Image = image
				sync := p.add(pools.Step{ID: "image-sync:" + key, Kind: pools.StepImageSync, Target: key, Member: &sm,
					Reason:   fmt.Sprintf("because registry %s of %s needs image %s", d.Registry, d.Context, d.Image),
					Estimate: estimate})
				if ensure != nil {
					dependOn(sync, ensure.ID)
				}
			}
		}
	}
}

// image is the image an image-sync of member d copies and what it is
// expected to cost. A tag the refresh resolved (the image-sync plugin saw
// its digest at the source) is pinned to that digest, so the apply copies
// what the plan was made from; the bytes are those the plugin found
// missing at the member's registry, when it measured them.
func (p *podPools) image(d pools.MemberState) (string, pools.Estimate) {
	est := pools.Estimate{Seconds: ImageSyncSeconds}
	seen := p.cur.MemberImage(d.Key(), d.Image)
	if seen == nil {
		return d.Image, est
	}
	image := d.Image
	if pools.ImageDigest(image) == "" && seen.Digest != "" {
		image += "@" + seen.Digest
	}
	est.TransferBytes = seen.MissingBytes
	est.TransferGB = float64(seen.MissingBytes) / 1e9
	return image, est
}

func sameExceptImage(a, b pools.MemberState) bool {
	a.Image, b.Image = "", ""
	return a == b
}

func memberReason(c *pools.MemberState, d pools.MemberState) string {
	if c == nil {
		return fmt.Sprintf("because %s joins pod_pool %s", d.Context, d.PodPool)
	}
	var changes []string
	if c.Capacity != d.Capacity {
		changes = append(changes, fmt.Sprintf("capacity %d → %d", c.Capacity, d.Capacity))
	}
	if c.Registry != d.Registry {
		changes = append(changes, fmt.Sprintf("registry %s → %s", orNone(c.Registry), orNone(d.Registry)))
	}
	if c.Priority != d.Priority {
		changes = append(changes, fmt.Sprintf("priority %d → %d", c.Priority, d.Priority))
	}
	if c.SSHHost != d.SSHHost {
		changes = append(changes, fmt.Sprintf("ssh host %s → %s", orNone(c.SSHHost), orNone(d.SSHHost)))
	}
	if c.Image != d.Image {
		changes = append(changes, fmt.Sprintf("image %s → %s", orNone(c.Image), orNone(d.Image)))
	}
	if c.PodMemoryGB != d.PodMemoryGB {
		changes = append(changes, fmt.Sprintf("pod memory %s → %s", memoryText(c.PodMemoryGB), memoryText(d.PodMemoryGB)))
	}
	return fmt.Sprintf("because member %s of pod_pool %s changes: %s", d.Context, d.PodPool, strings.Join(changes, ", "))
}

// memoryText is a pod memory limit for a reason: "4 GB", or "none".
func memoryText(gb float64) string {
	if gb == 0 {
		return "none"
	}
	return pools.GB(gb)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
