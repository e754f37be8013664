//go:build e2e

package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"poolc.dev/poolc/internal/testing/testkube"
	"poolc.dev/poolc/plugins/kube"
)

const applyPodPoolHCL = `pool "jobs-lab" {
  pod_pool "harness" {
    image     = "harness:1"
    namespace = "harness"
    pod_memory_gb = 2
    members   = "member-a:2#k3d-reg:5051,member-b:3#k3d-reg:5052"
    cluster   = "kube"
  }
  plugin "kube" {
    builtin = true
    config = {
      kubeconfig = "KUBECONFIG"
    }
  }
  plugin "sim" {
    builtin = true
  }
}
`

// appliedPodPool is applyPodPoolHCL applied by the real poolc to two real
// API servers, member-a and member-b, for a test to change the pool or the
// clusters afterwards.
type appliedPodPool struct {
	env *testkube.Env
	// dir holds the pool file, pool.hcl; hcl is what it says.
	dir string
	hcl string
	// run runs poolc and returns its exit code and output.
	run func(args ...string) (int, string)
	// ctx bounds the test's calls to the API servers.
	ctx context.Context
}

// applyPodPool starts member-a and member-b, writes applyPodPoolHCL for
// them and applies it, failing t unless the apply succeeds.
func applyPodPool(t *testing.T) *appliedPodPool {
	t.Helper()
	p := &appliedPodPool{env: testkube.Start(t, testkube.Options{Clusters: []string{"member-a", "member-b"}}), dir: t.TempDir()}
	p.write(t, strings.Replace(applyPodPoolHCL, "KUBECONFIG", p.env.Kubeconfig, 1))
	p.run = poolcRunner(t)
	if code, out := p.run("apply", "--auto-approve", "--no-color", p.dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	p.ctx = ctx
	return p
}

// write replaces the pool file with hcl.
func (p *appliedPodPool) write(t *testing.T, hcl string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(p.dir, "pool.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	p.hcl = hcl
}

// poolcRunner runs the poolc that testscript.Main put on PATH (built-in
// plugins run as "poolc plugin-serve", which this test binary is not) and
// returns its exit code and output.
func poolcRunner(t *testing.T) func(args ...string) (int, string) {
	t.Helper()
	poolc, err := exec.LookPath("poolc")
	if err != nil {
		t.Fatal(err)
	}
	return func(args ...string) (int, string) {
		var out bytes.Buffer
		cmd := exec.Command(poolc, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), out.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, out.String()
	}
}

// TestE2EApplyBringsPodPoolMembersUp applies a pool whose pod pool's
// cluster plugin is kube against two real API servers: the members come
// up, the next plan is empty, a hand-edited quota is drift that one
// member-ensure puts back, and a capacity change in the config is one
// in-place member-ensure.
func TestE2EApplyBringsPodPoolMembersUp(t *testing.T) {
	p := applyPodPool(t)
	env, dir, run, ctx := p.env, p.dir, p.run, p.ctx
	for _, want := range []struct {
		name     string
		capacity int64
		registry string
	}{{"member-a", 2, "k3d-reg:5051"}, {"member-b", 3, "k3d-reg:5052"}} {
		cs := env.Cluster(want.name).Client
		ns, err := cs.CoreV1().Namespaces().Get(ctx, "harness", metav1.GetOptions{})
		if err != nil || ns.Labels[kube.LabelManagedBy] != kube.ManagedBy || ns.Labels[kube.LabelPodPool] != "harness" {
			t.Errorf("%s: namespace harness %v (%v), want it labelled as poolc's", want.name, ns.GetLabels(), err)
		}
		q, err := cs.CoreV1().ResourceQuotas("harness").Get(ctx, kube.QuotaName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", want.name, err)
		}
		if h := q.Spec.Hard[kube.JobCount]; h.Value() != want.capacity {
			t.Errorf("%s: quota %v, want %d", want.name, q.Spec.Hard, want.capacity)
		}
		lr, err := cs.CoreV1().LimitRanges("harness").Get(ctx, kube.LimitRangeName, metav1.GetOptions{})
		if err != nil || len(lr.Spec.Limits) != 1 || lr.Spec.Limits[0].Max.Memory().String() != "2G" {
			t.Errorf("%s: limit range %+v (%v), want pod memory 2G", want.name, lr, err)
		}
		cm, err := cs.CoreV1().ConfigMaps(kube.RegistryNamespace).Get(ctx, kube.RegistryConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: registry ConfigMap: %v", want.name, err)
		}
		if h, err := kube.ParseRegistryHosting([]byte(cm.Data[kube.RegistryKey])); err != nil || h.Registry() != want.registry {
			t.Errorf("%s: registry ConfigMap names %q (%v), want %s", want.name, h.Registry(), err, want.registry)
		}
	}
	if code, out := run("plan", "--detailed-exitcode", "--no-color", dir); code != ExitOK {
		t.Fatalf("plan after apply: exit %d, want no changes\n%s", code, out)
	}
	// A quota edited by hand is drift the next plan shows.
	cs := env.Cluster("member-b").Client
	q, err := cs.CoreV1().ResourceQuotas("harness").Get(ctx, kube.QuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard = corev1.ResourceList{kube.JobCount: resource.MustParse("7")}
	if _, err := cs.CoreV1().ResourceQuotas("harness").Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, out := run("plan", "--detailed-exitcode", "--no-color", dir)
	if code != ExitChanges || !strings.Contains(out, "member-ensure harness/member-b") || !strings.Contains(out, "capacity 7 → 3") || !strings.Contains(out, "Plan: 1 member-ensure ·") {
		t.Fatalf("plan after a hand edit: exit %d, want one member-ensure of member-b putting capacity 7 back to 3\n%s", code, out)
	}
	t.Logf("plan after the hand edit:\n%s", out)
	if code, out := run("apply", "--auto-approve", "--no-color", dir); code != ExitOK {
		t.Fatalf("apply over the hand edit: exit %d\n%s", code, out)
	}

	// A capacity change in the config is one in-place step.
	p.write(t, strings.Replace(p.hcl, "member-a:2#k3d-reg:5051", "member-a:4#k3d-reg:5051", 1))
	code, out = run("plan", "--detailed-exitcode", "--no-color", dir)
	if code != ExitChanges || !strings.Contains(out, "member-ensure harness/member-a") || !strings.Contains(out, "Plan: 1 member-ensure ·") {
		t.Fatalf("plan after the config change: exit %d\n%s", code, out)
	}
	t.Logf("plan after the config change:\n%s", out)
	before, err := env.Cluster("member-a").Client.CoreV1().ResourceQuotas("harness").Get(ctx, kube.QuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if code, out := run("apply", "--auto-approve", "--no-color", dir); code != ExitOK {
		t.Fatalf("apply of the config change: exit %d\n%s", code, out)
	}
	after, err := env.Cluster("member-a").Client.CoreV1().ResourceQuotas("harness").Get(ctx, kube.QuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := after.Spec.Hard[kube.JobCount]; h.Value() != 4 || after.UID != before.UID {
		t.Errorf("member-a quota after the change: %v (uid %s, was %s)", after.Spec.Hard, after.UID, before.UID)
	}
	if code, out := run("plan", "--detailed-exitcode", "--no-color", dir); code != ExitOK {
		t.Fatalf("plan after the last apply: exit %d\n%s", code, out)
	}
}

// TestE2EApplyRemovesAMemberLeavingTheConfig applies a pod pool of two
// members against two real API servers, then drops member-b from the
// config: the plan is one member-remove, whose apply deletes what poolc
// made on member-b (namespace with its quota and limit range, the
// registry ConfigMap) and nothing else there (a foreign namespace and a
// foreign kube-public ConfigMap survive), leaves member-a as it was, and
// the next plan is empty.
func TestE2EApplyRemovesAMemberLeavingTheConfig(t *testing.T) {
	p := applyPodPool(t)
	dir, run, ctx := p.dir, p.run, p.ctx
	a, b := p.env.Cluster("member-a").Client, p.env.Cluster("member-b").Client
	if _, err := b.CoreV1().LimitRanges("harness").Get(ctx, kube.LimitRangeName, metav1.GetOptions{}); err != nil {
		t.Fatalf("member-b limit range after apply: %v", err)
	}
	// What is not poolc's on member-b.
	if _, err := b.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "foreign"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CoreV1().ResourceQuotas("foreign").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: kube.QuotaName},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{kube.JobCount: resource.MustParse("1")}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CoreV1().ConfigMaps(kube.RegistryNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "foreign"},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	quotaA, err := a.CoreV1().ResourceQuotas("harness").Get(ctx, kube.QuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	p.write(t, strings.Replace(p.hcl, "member-a:2#k3d-reg:5051,member-b:3#k3d-reg:5052", "member-a:2#k3d-reg:5051", 1))
	code, out := run("plan", "--detailed-exitcode", "--no-color", dir)
	if code != ExitChanges || !strings.Contains(out, "member-remove harness/member-b") || !strings.Contains(out, "Plan: 1 member-remove ·") {
		t.Fatalf("plan after member-b left the config: exit %d, want one member-remove of member-b\n%s", code, out)
	}
	if strings.Contains(out, "Drift:") {
		t.Errorf("plan after member-b left the config reports drift; nothing changed in the clusters:\n%s", out)
	}
	t.Logf("plan after member-b left the config:\n%s", out)
	if code, out := run("apply", "--auto-approve", "--no-color", dir); code != ExitOK {
		t.Fatalf("apply of the removal: exit %d\n%s", code, out)
	}

	gone := func(what string, err error) {
		t.Helper()
		if !apierrors.IsNotFound(err) {
			t.Errorf("member-b %s after the removal: %v, want not found", what, err)
		}
	}
	_, err = b.CoreV1().Namespaces().Get(ctx, "harness", metav1.GetOptions{})
	gone("namespace harness", err)
	_, err = b.CoreV1().ResourceQuotas("harness").Get(ctx, kube.QuotaName, metav1.GetOptions{})
	gone("quota", err)
	_, err = b.CoreV1().LimitRanges("harness").Get(ctx, kube.LimitRangeName, metav1.GetOptions{})
	gone("limit range", err)
	_, err = b.CoreV1().ConfigMaps(kube.RegistryNamespace).Get(ctx, kube.RegistryConfigMap, metav1.GetOptions{})
	gone("registry ConfigMap", err)
	if _, err := b.CoreV1().ResourceQuotas("foreign").Get(ctx, kube.QuotaName, metav1.GetOptions{}); err != nil {
		t.Errorf("member-b's foreign quota: %v, want it kept", err)
	}
	if cm, err := b.CoreV1().ConfigMaps(kube.RegistryNamespace).Get(ctx, "foreign", metav1.GetOptions{}); err != nil || cm.Data["k"] != "v" {
		t.Errorf("member-b's foreign ConfigMap: %v %v, want it kept", cm, err)
	}
	if q, err := a.CoreV1().ResourceQuotas("harness").Get(ctx, kube.QuotaName, metav1.GetOptions{}); err != nil || q.UID != quotaA.UID || q.ResourceVersion != quotaA.ResourceVersion {
		t.Errorf("member-a's quota after member-b's removal: %v, want it untouched", err)
	}
	if _, err := a.CoreV1().ConfigMaps(kube.RegistryNamespace).Get(ctx, kube.RegistryConfigMap, metav1.GetOptions{}); err != nil {
		t.Errorf("member-a's registry ConfigMap: %v, want it kept", err)
	}
	if code, out := run("plan", "--detailed-exitcode", "--no-color", dir); code != ExitOK {
		t.Fatalf("plan after the removal: exit %d, want no changes\n%s", code, out)
	}
}
