package host

import (
	"testing"

	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// A pod pool whose cluster plugin and image-sync plugin differ: the
// cluster plugin's view of a member's image never overrides the image
// plugin's, in either order.
func TestRefreshKeepsTheImagePluginsImage(t *testing.T) {
	member := func(image string) pools.MemberState {
		return pools.MemberState{PodPool: "harness", Context: "k1", Capacity: 2, Registry: "k3d-r:5000", Image: image}
	}
	listed := map[string]bool{"harness/k1": true}
	cluster := seen{plugin: "sim", parts: []string{sdk.ObserveMembers}, owns: owner{clusters: map[string]bool{"harness": true}},
		fleet: pools.Fleet{Members: []pools.MemberState{member("h@sha256:old")}}}
	images := seen{plugin: "image-sync", parts: []string{sdk.ObserveImages}, owns: owner{imageSyncs: map[string]bool{"harness": true}, listed: listed},
		fleet: pools.Fleet{Members: []pools.MemberState{member("h@sha256:new")}}}
	for _, order := range [][]seen{{cluster, images}, {images, cluster}} {
		f := pools.Fleet{Members: []pools.MemberState{member("h@sha256:new")}}
		Observation{seen: order}.Refresh(&f)
		if len(f.Members) != 1 || f.Members[0].Image != "h@sha256:new" {
			t.Errorf("%s then %s: members %+v, want the image plugin's h@sha256:new", order[0].plugin, order[1].plugin, f.Members)
		}
	}
	// One plugin serving both keeps the last word on the image.
	both := seen{plugin: "sim", parts: []string{sdk.ObserveMembers, sdk.ObserveImages},
		owns:  owner{clusters: map[string]bool{"harness": true}, imageSyncs: map[string]bool{"harness": true}, listed: listed},
		fleet: pools.Fleet{Members: []pools.MemberState{member("h@sha256:old")}}}
	f := pools.Fleet{Members: []pools.MemberState{member("h@sha256:new")}}
	Observation{seen: []seen{both}}.Refresh(&f)
	if f.Members[0].Image != "h@sha256:old" {
		t.Errorf("one plugin for both: image %q, want its h@sha256:old", f.Members[0].Image)
	}
}

// A member without a registry has no image to sync: an image-sync plugin
// that does not report it leaves the image the state records.
func TestRefreshLeavesTheImageOfAMemberWithoutRegistry(t *testing.T) {
	images := seen{plugin: "sim", parts: []string{sdk.ObserveImages}, owns: owner{imageSyncs: map[string]bool{"harness": true}}}
	f := pools.Fleet{Members: []pools.MemberState{{PodPool: "harness", Context: "k2", Capacity: 1, Image: "h:1"}}}
	if drift := (Observation{seen: []seen{images}}).Refresh(&f); len(drift) != 0 || f.Members[0].Image != "h:1" {
		t.Errorf("members %+v, drift %v; want the image kept", f.Members, drift)
	}
}

// A member leaving the pool is observed by its cluster plugin alone: the
// image-sync plugin, which does not have it, leaves its image as the
// state records it, so the refresh reports no drift for it.
func TestRefreshLeavesTheImageOfALeavingMember(t *testing.T) {
	pool := &pools.Pool{PodPools: []pools.PodPool{{Name: "harness", Cluster: "kube", ImageSync: "image-sync", Members: []pools.Member{{Context: "k1"}}}}}
	leaving := pools.MemberState{PodPool: "harness", Context: "k2", Capacity: 1, Registry: "k3d-r:5001", Image: "h:1"}
	cluster := seen{plugin: "kube", parts: []string{sdk.ObserveMembers}, owns: ownerOf(pool, nil, "kube"),
		fleet: pools.Fleet{Members: []pools.MemberState{{PodPool: "harness", Context: "k2", Capacity: 1, Registry: "k3d-r:5001"}}}}
	images := seen{plugin: "image-sync", parts: []string{sdk.ObserveImages}, owns: ownerOf(pool, nil, "image-sync")}
	f := pools.Fleet{Members: []pools.MemberState{leaving}}
	if drift := (Observation{seen: []seen{cluster, images}}).Refresh(&f); len(drift) != 0 || len(f.Members) != 1 || f.Members[0] != leaving {
		t.Errorf("members %+v, drift %v; want the leaving member kept as it was", f.Members, drift)
	}
}

// What an image-sync plugin saw of its pod pools' images (digest, bytes
// missing) replaces what an earlier refresh left, for its pod pools only,
// and is no drift: it is an observation, not state.
func TestRefreshLaysTheMembersImagesWithoutDrift(t *testing.T) {
	gap := func(pool, ctx string, n int64) pools.MemberImage {
		return pools.MemberImage{PodPool: pool, Context: ctx, Image: "h:1", Digest: "sha256:aa", MissingBytes: n}
	}
	images := seen{plugin: "image-sync", parts: []string{sdk.ObserveImages}, owns: owner{imageSyncs: map[string]bool{"harness": true}},
		fleet: pools.Fleet{Images: []pools.MemberImage{gap("harness", "k1", 700), gap("other", "k9", 1)}}}
	f := pools.Fleet{Images: []pools.MemberImage{gap("harness", "k1", 5), gap("jobs", "k2", 9)}}
	drift := Observation{seen: []seen{images}}.Refresh(&f)
	if len(drift) != 0 {
		t.Errorf("drift %v, want none", drift)
	}
	if k1, k2 := f.MemberImage("harness/k1", "h:1"), f.MemberImage("jobs/k2", "h:1"); len(f.Images) != 2 || k1 == nil || k1.MissingBytes != 700 || k2 == nil || k2.MissingBytes != 9 {
		t.Errorf("images %+v, want harness/k1 as seen (700 bytes) and jobs/k2 kept", f.Images)
	}
}

// A runtime plugin that does not report the digest and source of the
// weights a lane process loads leaves those the state recorded, so the
// next plan does not lose what the lane runs; a process on another port
// or file is another process and keeps nothing.
func TestRefreshKeepsTheDigestsAPluginDoesNotSee(t *testing.T) {
	recorded := pools.LaneState{Name: "chat", Node: "a", Model: "qwen", Port: 8080, Path: "/m/q.gguf", SHA256: "abc", Source: "nas:/q.gguf"}
	blind := recorded
	blind.SHA256, blind.Source = "", ""
	moved := blind
	moved.Port = 8082
	file := pools.Prefetch{Node: "a", Model: "qwen", Path: "/m/q.gguf", SHA256: "abc"}
	blindFile := file
	blindFile.SHA256 = ""
	runtime := seen{plugin: "llama", parts: []string{sdk.ObserveLanes, sdk.ObservePrefetched}, owns: owner{nodes: map[string]bool{"a": true}},
		fleet: pools.Fleet{Lanes: []pools.LaneState{blind, moved}, Prefetched: []pools.Prefetch{blindFile}}}
	f := pools.Fleet{Lanes: []pools.LaneState{recorded}, Prefetched: []pools.Prefetch{file}}
	f.Normalize()
	if drift := (Observation{seen: []seen{runtime}}).Refresh(&f); len(drift) != 1 {
		t.Errorf("drift %v, want only the process on 8082", drift)
	}
	if len(f.Lanes) != 2 || f.Lanes[0].SHA256 != "abc" || f.Lanes[0].Source != "nas:/q.gguf" || f.Lanes[1].SHA256 != "" || f.Prefetched[0] != file {
		t.Errorf("lanes %+v, weights %+v; want the recorded digest kept on 8080 only", f.Lanes, f.Prefetched)
	}
}

// Unknown is not absent: a node, the gateway or a member its plugin could
// not observe keeps what the state records there (no drift, not down),
// and is listed in the fleet's Unobserved with its plugin; an entry for a
// target that is not the plugin's is ignored. A node recorded down is no
// longer taken as down: only its membership can say so.
func TestRefreshKeepsWhatItCouldNotObserve(t *testing.T) {
	o := owner{nodes: map[string]bool{"n1": true, "n2": true}, gateway: true, clusters: map[string]bool{"harness": true}}
	unobs := []pools.Unobserved{
		{Kind: "node", Name: "n2", Cause: "host-key-changed"},
		{Kind: "gateway", Cause: "timeout"},
		{Kind: "member", PodPool: "harness", Context: "k1", Cause: "refused"},
		{Kind: "node", Name: "elsewhere", Cause: "unreachable"},
	}
	s := seen{plugin: "llama", parts: []string{sdk.ObserveNodes, sdk.ObserveLanes, sdk.ObserveRoutes, sdk.ObserveMembers}, owns: o,
		fleet: pools.Fleet{Nodes: []pools.NodeState{{Name: "n1"}}, Lanes: []pools.LaneState{{Name: "chat", Node: "n1", Port: 8080}}},
		unobs: o.own("llama", unobs)}
	f := pools.Fleet{
		Nodes:   []pools.NodeState{{Name: "n1"}, {Name: "n2", Down: true}},
		Lanes:   []pools.LaneState{{Name: "chat", Node: "n1", Port: 8080}, {Name: "scribe", Node: "n2", Port: 8081}},
		Routes:  []pools.Route{{Alias: "notes", Lane: "scribe", Node: "n2", Port: 8081}},
		Members: []pools.MemberState{{PodPool: "harness", Context: "k1", Capacity: 2}},
	}
	f.Normalize()
	want := f.Clone()
	want.Nodes[1].Down = false
	drift := Observation{seen: []seen{s}}.Refresh(&f)
	if len(drift) != 0 {
		t.Errorf("drift %v, want none", drift)
	}
	got := f.Clone()
	got.Unobserved, want.Unobserved = nil, nil
	if d := diff(want, got); len(d) != 0 {
		t.Errorf("the refresh changed what it could not observe: %v", d)
	}
	if len(f.Unobserved) != 3 || f.Unobserved[0].Plugin != "llama" || f.UnobservedNode("n2") == nil || f.UnobservedNode("elsewhere") != nil {
		t.Errorf("unobserved %+v, want n2, the gateway and k1, each of plugin llama", f.Unobserved)
	}
}
