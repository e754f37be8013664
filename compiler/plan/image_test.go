package plan

import (
	"testing"
	"time"

	"poolc.dev/poolc/compiler/place"
	"poolc.dev/poolc/pools"
)

// imagePlan plans a pod pool of two members with registries, image
// image, from a current fleet cur.
func imagePlan(t *testing.T, image string, cur pools.Fleet) *pools.Plan {
	t.Helper()
	var des pools.Fleet
	for i, ctx := range []string{"a", "b"} {
		des.Members = append(des.Members, pools.MemberState{PodPool: "jobs", Context: ctx, Priority: i, Capacity: 2, Registry: "k3d-reg:500" + string(rune('0'+i)), Image: image})
	}
	des.Normalize()
	cur.Normalize()
	p, err := Diff(Input{Pool: &pools.Pool{Name: "lab"}, Placement: place.Result{Desired: des}, Current: cur, Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func syncs(p *pools.Plan) map[string]pools.Step {
	out := map[string]pools.Step{}
	for _, s := range p.Steps {
		if s.Kind == pools.StepImageSync {
			out[s.Member.Context] = s
		}
	}
	return out
}

const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

// The bytes the image-sync plugin found missing at each member's
// registry are the step's expected transfer; a member whose registry
// already serves the image gets no step.
func TestImageSyncStepsCarryTheMissingBytes(t *testing.T) {
	image := "app@" + digest
	cur := pools.Fleet{
		Members: []pools.MemberState{
			{PodPool: "jobs", Context: "a", Priority: 0, Capacity: 2, Registry: "k3d-reg:5000"},
			{PodPool: "jobs", Context: "b", Priority: 1, Capacity: 2, Registry: "k3d-reg:5001", Image: image},
		},
		Images: []pools.MemberImage{
			{PodPool: "jobs", Context: "a", Image: image, Digest: digest, MissingBytes: 12_400_000},
			{PodPool: "jobs", Context: "b", Image: image, Digest: digest},
		},
	}
	p := imagePlan(t, image, cur)
	got := syncs(p)
	if len(p.Steps) != 1 || len(got) != 1 {
		t.Fatalf("steps %+v, want one image-sync, to a", p.Steps)
	}
	a := got["a"]
	if a.Estimate.TransferBytes != 12_400_000 || a.Estimate.TransferGB != 0.0124 || a.Member.Image != image {
		t.Errorf("image-sync to a: %+v, want 12400000 bytes of %s", a, image)
	}
}

// A tag is pinned, for the plan, to the digest the refresh saw it name
// at the source; once synced, the member's recorded NAME:TAG@DIGEST
// satisfies the tag, so the plan after the apply is empty, with or
// without a refresh, and a capacity change keeps the digest recorded.
func TestATagIsPinnedOncePerPlanAndSettles(t *testing.T) {
	cur := pools.Fleet{Images: []pools.MemberImage{
		{PodPool: "jobs", Context: "a", Image: "app:v1", Digest: digest, MissingBytes: 5000},
		{PodPool: "jobs", Context: "b", Image: "app:v1", Digest: digest, MissingBytes: 5000},
	}}
	p := imagePlan(t, "app:v1", cur)
	for _, ctx := range []string{"a", "b"} {
		s, ok := syncs(p)[ctx]
		if !ok || s.Member.Image != "app:v1@"+digest {
			t.Errorf("image-sync to %s: %+v, want app:v1@%s", ctx, s.Member, digest)
		}
	}
	after := p.After.Clone()
	for _, m := range after.Members {
		if m.Image != "app:v1@"+digest {
			t.Errorf("after the plan %s holds %q", m.Context, m.Image)
		}
	}
	refreshed := after.Clone()
	refreshed.Images = []pools.MemberImage{
		{PodPool: "jobs", Context: "a", Image: "app:v1", Digest: digest},
		{PodPool: "jobs", Context: "b", Image: "app:v1", Digest: digest},
	}
	for name, f := range map[string]pools.Fleet{"refreshed": refreshed, "from the state": after} {
		if again := imagePlan(t, "app:v1", f); len(again.Steps) != 0 {
			t.Errorf("plan after the apply (%s): %+v, want none", name, again.Steps)
		}
	}
	// The tag now names another digest: the refresh reports the member
	// without the image, and one image-sync per member is planned.
	const moved = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	for i := range refreshed.Members {
		refreshed.Members[i].Image = ""
		refreshed.Images[i].Digest, refreshed.Images[i].MissingBytes = moved, 100
	}
	if got := syncs(imagePlan(t, "app:v1", refreshed)); len(got) != 2 || got["a"].Member.Image != "app:v1@"+moved {
		t.Errorf("a moved tag: %+v, want an image-sync of app:v1@%s per member", got, moved)
	}
	// A capacity change is a member-ensure that keeps the synced digest.
	for i := range after.Members {
		after.Members[i].Capacity = 3
	}
	p = imagePlan(t, "app:v1", after)
	if len(p.Steps) != 2 || len(syncs(p)) != 0 {
		t.Fatalf("a capacity change: %+v, want two member-ensures", p.Steps)
	}
	for _, s := range p.Steps {
		if s.Member.Image != "app:v1@"+digest {
			t.Errorf("%s records %q, want the synced app:v1@%s", s.ID, s.Member.Image, digest)
		}
	}
}

// A member-ensure never records an image: only the image-sync that
// follows it reads the digest back from the member's registry. So when
// the sync fails after the ensure succeeded, the state (the plan's
// steps applied up to the failure) keeps the member's previous image
// (here: none, and the old image of a registry that changed is dropped)
// and no Job is handed a copy the registry never received.
func TestAFailedSyncLeavesTheRecordedImage(t *testing.T) {
	image := "app@" + digest
	const old = "app@sha256:0000000000000000000000000000000000000000000000000000000000000000"
	cur := pools.Fleet{Members: []pools.MemberState{
		{PodPool: "jobs", Context: "b", Priority: 1, Capacity: 1, Registry: "k3d-reg:4999", Image: old},
	}}
	p := imagePlan(t, image, cur)
	state := cur.Clone()
	for _, s := range p.Steps {
		if s.Kind == pools.StepImageSync {
			continue // the sync failed
		}
		if s.Member.Image != "" {
			t.Errorf("%s records image %q, which no sync verified", s.ID, s.Member.Image)
		}
		if err := state.Apply(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range state.Members {
		if m.Image != "" || m.RegistryImage(image) != "" {
			t.Errorf("after a failed sync member %s records image %q (copy %q)", m.Context, m.Image, m.RegistryImage(image))
		}
	}
	if got := syncs(p); len(got) != 2 {
		t.Errorf("image-syncs %v, want one per member", got)
	}
}
