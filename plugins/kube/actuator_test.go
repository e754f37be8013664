package kube

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"poolc.dev/poolc/internal/testing/deadaddr"
	"poolc.dev/poolc/plugins/sdk"
)

func sdkMember() sdk.Member {
	return sdk.Member{PodPool: "harness", Context: "fake", Namespace: "jobs", Capacity: 2, Registry: "k3d-reg:5051", PodMemoryGB: 1.5}
}

func TestActuatorEnsureObserveRemove(t *testing.T) {
	k, cs := withFake()
	a := NewActuator("test")
	a.k, a.observed = k, []sdk.Member{sdkMember()}
	ctx := context.Background()
	if got := a.Observe(ctx, sdk.ObserveRequest{}); len(got.Fleet.Members) != 0 || len(got.Diagnostics) != 0 {
		t.Fatalf("before ensure: %+v", got)
	}
	var progress []string
	resp := a.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "e", Kind: sdk.KindMemberEnsure, Member: new(sdkMember())}},
		func(p sdk.Progress) { progress = append(progress, p.Message) })
	if resp.Diagnostics.HasErrors() || len(progress) != 4 || resp.Observed == nil || len(resp.Observed.Members) != 1 || resp.Observed.Members[0] != sdkMember() {
		t.Fatalf("ensure: %+v progress %q", resp, progress)
	}
	obs := a.Observe(ctx, sdk.ObserveRequest{})
	if len(obs.Fleet.Members) != 1 || obs.Fleet.Members[0] != sdkMember() {
		t.Fatalf("observed %+v, want the member as ensured", obs.Fleet.Members)
	}
	// A hand-edited quota shows as a capacity change.
	q, _ := cs.CoreV1().ResourceQuotas("jobs").Get(ctx, QuotaName, metav1.GetOptions{})
	q.Spec.Hard[JobCount] = *resourceOf(9)
	if _, err := cs.CoreV1().ResourceQuotas("jobs").Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if obs := a.Observe(ctx, sdk.ObserveRequest{}); obs.Fleet.Members[0].Capacity != 9 {
		t.Fatalf("observed capacity %d after the edit, want 9", obs.Fleet.Members[0].Capacity)
	}
	resp = a.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "r", Kind: sdk.KindMemberRemove, Member: new(sdkMember())}}, func(sdk.Progress) {})
	if resp.Diagnostics.HasErrors() {
		t.Fatalf("remove: %+v", resp.Diagnostics)
	}
	resp = a.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "x", Kind: sdk.KindStart, Member: new(sdkMember())}}, func(sdk.Progress) {})
	if !resp.Diagnostics.HasErrors() || !strings.Contains(resp.Diagnostics[0].Summary, "does not carry out start steps") {
		t.Fatalf("a start step: %+v", resp.Diagnostics)
	}
}

func TestActuatorConfigureChecksMembers(t *testing.T) {
	a := NewActuator("test")
	bad := sdkMember()
	bad.Capacity = 0
	resp := a.Configure(context.Background(), sdk.ConfigureRequest{ConfigJSON: []byte(`{"kubeconfig": "/nonexistent/kubeconfig"}`),
		Inventory: sdk.Inventory{Members: []sdk.Member{bad}}})
	if !resp.Diagnostics.HasErrors() || !strings.Contains(resp.Diagnostics[0].Summary, "capacity 0, want at least 1") {
		t.Fatalf("configure: %+v", resp.Diagnostics)
	}
}

// TestActuatorObservesLeavingMembers: a member the pool no longer lists
// but the inventory gives as leaving is observed like the others, so the
// plan can remove it; once its namespace is gone it is not reported.
func TestActuatorObservesLeavingMembers(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	staying, leaving := sdkMember(), sdkMember()
	staying.Namespace = "stays"
	a := NewActuator("test")
	resp := a.Configure(context.Background(), sdk.ConfigureRequest{ConfigJSON: []byte(`{"kubeconfig": "` + kubeconfig + `"}`),
		Inventory: sdk.Inventory{Members: []sdk.Member{staying}, Leaving: []sdk.Member{leaving}}})
	if resp.Diagnostics.HasErrors() {
		t.Fatalf("configure: %+v", resp.Diagnostics)
	}
	k, _ := withFake()
	a.k = k
	ctx := context.Background()
	if _, err := k.Ensure(ctx, fromSDK(leaving)); err != nil {
		t.Fatal(err)
	}
	obs := a.Observe(ctx, sdk.ObserveRequest{})
	if len(obs.Fleet.Members) != 1 || obs.Fleet.Members[0] != leaving {
		t.Fatalf("observed %+v, want the leaving member", obs.Fleet.Members)
	}
	if _, err := k.Remove(ctx, fromSDK(leaving), RemoveOptions{Poll: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if obs := a.Observe(ctx, sdk.ObserveRequest{}); len(obs.Fleet.Members) != 0 {
		t.Fatalf("observed %+v after the removal, want none", obs.Fleet.Members)
	}
}

func resourceOf(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

// TestAMemberWhoseClusterCannotBeReachedIsUnobserved: with nothing
// listening at the API server's address, Observe reports the member
// unobserved (refused), not a member without a namespace, which poolc
// would set up again.
func TestAMemberWhoseClusterCannotBeReachedIsUnobserved(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: gone, cluster: {server: "https://` + deadaddr.TCP(t) + `", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: gone, context: {cluster: gone, user: u}}]
`
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := LoadKubeconfig(file)
	if err != nil {
		t.Fatal(err)
	}
	a := NewActuator("test")
	m := sdkMember()
	m.Context = "gone"
	a.k, a.observed = k, []sdk.Member{m}
	obs := a.Observe(context.Background(), sdk.ObserveRequest{})
	if u := obs.Fleet.Unobserved; len(u) != 1 || u[0].Kind != sdk.TargetMember || u[0].PodPool != "harness" || u[0].Context != "gone" ||
		u[0].Cause != sdk.CauseRefused || len(obs.Fleet.Members) != 0 || len(obs.Diagnostics) != 0 {
		t.Errorf("Observe with no API server: %+v", obs)
	}
}
