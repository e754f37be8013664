//go:build e2e

package cli

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"poolc.dev/poolc/internal/testing/testkube"
	"poolc.dev/poolc/plugins/kube"
)

// TestE2EApplyRemovesAPodPoolLeavingTheConfig applies a pod pool of two
// members through the kube plugin against two real API servers, then
// deletes the whole pod_pool block from the config. Without the kube
// plugin's declaration poolc refuses, naming it; with it kept (as a
// provider must stay for its resources to be destroyed) the state's
// record that kube served the pod pool, and in which namespace, makes
// the plan a member-remove per member, the apply carries them out
// through kube (deleting what poolc made on both clusters and nothing
// else), and the next plan is empty.
func TestE2EApplyRemovesAPodPoolLeavingTheConfig(t *testing.T) {
	p := applyPodPool(t)
	dir, hcl, run, ctx := p.dir, p.hcl, p.run, p.ctx
	clusters := map[string]*testkube.Cluster{"member-a": p.env.Cluster("member-a"), "member-b": p.env.Cluster("member-b")}
	for name, c := range clusters {
		if _, err := c.Client.CoreV1().ResourceQuotas("harness").Get(ctx, kube.QuotaName, metav1.GetOptions{}); err != nil {
			t.Fatalf("%s: quota after apply: %v", name, err)
		}
		// Not poolc's: it must survive the removal.
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "foreign"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	start := strings.Index(hcl, "  pod_pool \"harness\" {")
	end := strings.Index(hcl, "  plugin \"kube\" {")
	if start < 0 || end < start {
		t.Fatalf("cannot cut the pod_pool block out of:\n%s", hcl)
	}
	// With the kube plugin's declaration gone too, nothing could reach
	// the members: poolc refuses, naming the plugin to keep.
	sim := strings.Index(hcl, "  plugin \"sim\" {")
	p.write(t, hcl[:start]+hcl[sim:])
	code, out := run("plan", "--no-color", dir)
	if code != ExitError || !strings.Contains(out, `the state records that plugin "kube" served pod_pool "harness" cluster, which has left the pool`) ||
		!strings.Contains(out, `keep plugin "kube" { ... } declared`) {
		t.Fatalf("plan without the pod pool and its plugin: exit %d, want a refusal naming plugin kube\n%s", code, out)
	}

	p.write(t, hcl[:start]+hcl[end:])
	code, out = run("plan", "--detailed-exitcode", "--no-color", dir)
	if code != ExitChanges || !strings.Contains(out, "member-remove harness/member-a") || !strings.Contains(out, "member-remove harness/member-b") ||
		!strings.Contains(out, "Plan: 2 member-remove ·") || strings.Contains(out, "Drift:") {
		t.Fatalf("plan after the pod pool left the config: exit %d, want two member-removes and no drift\n%s", code, out)
	}
	t.Logf("plan after the pod pool left the config:\n%s", out)
	code, out = run("apply", "--auto-approve", "--no-color", dir)
	if code != ExitOK || !strings.Contains(out, "Apply complete: 2 steps done.") {
		t.Fatalf("apply of the removal: exit %d\n%s", code, out)
	}
	t.Logf("apply of the removal:\n%s", out)
	for name, c := range clusters {
		if _, err := c.Client.CoreV1().Namespaces().Get(ctx, "harness", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: namespace harness after the removal: %v, want not found", name, err)
		}
		if _, err := c.Client.CoreV1().ConfigMaps(kube.RegistryNamespace).Get(ctx, kube.RegistryConfigMap, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: registry ConfigMap after the removal: %v, want not found", name, err)
		}
		if _, err := c.Client.CoreV1().Namespaces().Get(ctx, "foreign", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: foreign namespace: %v, want it kept", name, err)
		}
	}
	if code, out := run("plan", "--detailed-exitcode", "--no-color", dir); code != ExitOK {
		t.Fatalf("plan after the removal: exit %d, want no changes\n%s", code, out)
	}
}
