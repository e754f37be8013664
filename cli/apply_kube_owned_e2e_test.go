//go:build e2e

package cli

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"poolc.dev/poolc/plugins/kube"
)

// TestE2EALimitRangeDeletedByHandIsDrift applies a pod pool with a pod
// memory limit against two real API servers, deletes member-b's
// LimitRange by hand: the next plan is one member-ensure of member-b
// putting the limit back, whose apply recreates it, and the plan after
// that is empty.
func TestE2EALimitRangeDeletedByHandIsDrift(t *testing.T) {
	p := applyPodPool(t)
	dir, run, ctx := p.dir, p.run, p.ctx
	b := p.env.Cluster("member-b").Client
	if err := b.CoreV1().LimitRanges("harness").Delete(ctx, kube.LimitRangeName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	code, out := run("plan", "--detailed-exitcode", "--no-color", dir)
	if code != ExitChanges || !strings.Contains(out, "member-ensure harness/member-b") || !strings.Contains(out, "pod memory none → 2 GB") || !strings.Contains(out, "Plan: 1 member-ensure ·") {
		t.Fatalf("plan after the LimitRange was deleted by hand: exit %d, want one member-ensure of member-b\n%s", code, out)
	}
	t.Logf("plan after the LimitRange was deleted:\n%s", out)
	if code, out := run("apply", "--auto-approve", "--no-color", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	if lr, err := b.CoreV1().LimitRanges("harness").Get(ctx, kube.LimitRangeName, metav1.GetOptions{}); err != nil || lr.Spec.Limits[0].Max.Memory().String() != "2G" {
		t.Errorf("member-b's LimitRange after the apply: %v %v", lr, err)
	}
	if code, out := run("plan", "--detailed-exitcode", "--no-color", dir); code != ExitOK {
		t.Fatalf("plan after the apply: exit %d\n%s", code, out)
	}
}

// TestE2EAUsersObjectSurvivesAMemberRemove drops member-b from a pod pool
// whose namespace on member-b poolc made and a user put a ConfigMap in:
// the plan says the remove keeps the namespace and why; the apply deletes
// poolc's quota, limit range and registry ConfigMap there and keeps the
// namespace with the user's ConfigMap; the next plan is empty.
func TestE2EAUsersObjectSurvivesAMemberRemove(t *testing.T) {
	p := applyPodPool(t)
	dir, run, ctx := p.dir, p.run, p.ctx
	b := p.env.Cluster("member-b").Client
	if _, err := b.CoreV1().ConfigMaps("harness").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "user-data"},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.write(t, strings.Replace(p.hcl, "member-a:2#k3d-reg:5051,member-b:3#k3d-reg:5052", "member-a:2#k3d-reg:5051", 1))
	code, out := run("plan", "--detailed-exitcode", "--no-color", dir)
	if code != ExitChanges || !strings.Contains(out, "member-remove harness/member-b") || !strings.Contains(out, "keeps namespace harness") || !strings.Contains(out, "configmaps/user-data") {
		t.Fatalf("plan after member-b left the config: exit %d, want a member-remove saying it keeps namespace harness for configmaps/user-data\n%s", code, out)
	}
	t.Logf("plan after member-b left the config:\n%s", out)
	if code, out := run("apply", "--auto-approve", "--no-color", dir); code != ExitOK {
		t.Fatalf("apply of the removal: exit %d\n%s", code, out)
	}
	if cm, err := b.CoreV1().ConfigMaps("harness").Get(ctx, "user-data", metav1.GetOptions{}); err != nil || cm.Data["k"] != "v" {
		t.Fatalf("the user's ConfigMap after the removal: %v %v, want it kept", cm, err)
	}
	ns, err := b.CoreV1().Namespaces().Get(ctx, "harness", metav1.GetOptions{})
	if err != nil || ns.DeletionTimestamp != nil || ns.Labels[kube.LabelManagedBy] != "" {
		t.Errorf("namespace harness after the removal: %+v %v, want it kept, no longer labelled as poolc's", ns.ObjectMeta, err)
	}
	for what, err := range map[string]error{
		"quota":       get(b.CoreV1().ResourceQuotas("harness").Get(ctx, kube.QuotaName, metav1.GetOptions{})),
		"limit range": get(b.CoreV1().LimitRanges("harness").Get(ctx, kube.LimitRangeName, metav1.GetOptions{})),
	} {
		if !apierrors.IsNotFound(err) {
			t.Errorf("member-b's %s after the removal: %v, want it deleted", what, err)
		}
	}
	if code, out := run("plan", "--detailed-exitcode", "--no-color", dir); code != ExitOK {
		t.Fatalf("plan after the removal: exit %d, want no changes\n%s", code, out)
	}
}

// get keeps the error of a Get.
func get[T any](_ T, err error) error { return err }
