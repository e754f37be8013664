package orchestrate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/plugins/kube"
	"poolc.dev/poolc/plugins/kube/launch"
	"poolc.dev/poolc/pools"
)

const pinnedHCL = `pool "lab" {
  pod_pool "harness" {
    image      = "harness@sha256:538b000000000000000000000000000000000000000000000000000000000000"
    image_sync = "sim"
    members    = "member-a:2#k3d-reg-a:5051,member-b:2#k3d-reg-b:5052"
  }
}
`

// clients are fake API servers, one per context, each with the pool's
// namespace quota poolc apply makes.
type clients map[string]*fake.Clientset

func (c clients) Client(_ context.Context, name string) (kubernetes.Interface, error) {
	return c[name], nil
}

// The apply of a new pod pool ensures both members and syncs the image to
// both registries; the sync to member-a fails (its registry is down). The
// state then records no image at member-a, so `poolc pods run` does not
// hand member-a's cluster a copy its registry never received: the Job
// goes to member-b, the next member with room, and runs member-b's copy.
func TestAFailedSyncSendsJobsElsewhere(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pool.hcl"), []byte(pinnedHCL), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := compiler.Load([]string{dir})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	st := &pools.State{Pool: "lab", Lineage: "test", Serial: 1}
	p, err := compiler.Plan(cfg, st, compiler.PlanOptions{Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Steps {
		if s.ID == "image-sync:harness/member-a" {
			continue // failed: connection refused
		}
		if err := st.Fleet.Apply(s); err != nil {
			t.Fatal(err)
		}
	}
	data, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "poolc.state.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	pp := cfg.Pool.PodPools[0]
	members, err := PodMembers(cfg, pp)
	if err != nil {
		t.Fatal(err)
	}
	cl := clients{}
	for _, m := range members {
		q := resource.NewQuantity(int64(m.Capacity), resource.DecimalSI)
		cl[m.Context] = fake.NewSimpleClientset(&corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: kube.QuotaName, Namespace: m.Namespace},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{kube.JobCount: *q}},
		})
	}
	placed, err := launch.Submit(context.Background(), cl, members, launch.CommandJob(pp.Image, []string{"run"}), launch.Options{Timeout: time.Second, Poll: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if placed.Context != "member-b" {
		t.Fatalf("the Job went to %s, whose registry never received the image; want member-b", placed.Context)
	}
	j, err := cl["member-b"].BatchV1().Jobs(placed.Namespace).Get(context.Background(), placed.Job, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := j.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(got, "k3d-reg-b:5052/harness@sha256:538b") {
		t.Errorf("the Job on member-b runs %s, want member-b's registry's copy", got)
	}
}
