//go:build e2e

package kube

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"poolc.dev/poolc/internal/testing/testkube"
)

// TestE2EMemberLifecycle runs ensure, observe and remove against two real
// API servers (with their controller managers), one per member context.
func TestE2EMemberLifecycle(t *testing.T) {
	env := testkube.Start(t, testkube.Options{Clusters: []string{"member-a", "member-b"}})
	k, err := LoadKubeconfig(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a := Member{Pool: "harness", Context: "member-a", Namespace: "jobs", Capacity: 2, Registry: "k3d-reg:5051", PodMemoryGB: 4}
	b := Member{Pool: "harness", Context: "member-b", Namespace: "jobs", Capacity: 3, Registry: "k3d-reg:5052", PodMemoryGB: 0.5}
	csA, csB := env.Cluster("member-a").Client, env.Cluster("member-b").Client

	// member-b's namespace and registry ConfigMap exist before poolc, as
	// k3d publishes its registry: poolc uses them and leaves them.
	must(t)(csB.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "jobs"}}, metav1.CreateOptions{}))
	must(t)(csB.CoreV1().ConfigMaps("jobs").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}}, metav1.CreateOptions{}))
	k3dDoc := RegistryHosting{Host: "localhost:5052", HostFromContainerRuntime: "k3d-reg:5052", HostFromClusterNetwork: "k3d-reg:5052"}.Render()
	must(t)(csB.CoreV1().ConfigMaps(RegistryNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: RegistryConfigMap, Labels: map[string]string{"app": "k3d"}},
		Data:       map[string]string{RegistryKey: k3dDoc},
	}, metav1.CreateOptions{}))

	t.Run("ensure", func(t *testing.T) {
		r, err := k.Ensure(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"namespace jobs created",
			"quota poolc-jobs created: count/jobs.batch=2",
			"limit range poolc-pod-memory created: pod memory 4G",
			"configmap kube-public/local-registry-hosting created: registry k3d-reg:5051",
		}
		if !slices.Equal(r.Changed, want) || len(r.Warnings) > 0 {
			t.Fatalf("ensure member-a: changed %q warnings %q, want %q", r.Changed, r.Warnings, want)
		}
		checkObjects(ctx, t, csA, a)
		r, err = k.Ensure(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Changed) != 2 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "existed before poolc") {
			t.Fatalf("ensure member-b: changed %q warnings %q, want quota and limit range made and a warning about the namespace", r.Changed, r.Warnings)
		}
		cm, err := csB.CoreV1().ConfigMaps(RegistryNamespace).Get(ctx, RegistryConfigMap, metav1.GetOptions{})
		if err != nil || cm.Data[RegistryKey] != k3dDoc || cm.Labels[LabelManagedBy] != "" {
			t.Fatalf("member-b's k3d registry ConfigMap was changed: %+v %v", cm, err)
		}
	})

	t.Run("idempotent", func(t *testing.T) {
		for _, m := range []Member{a, b} {
			r, err := k.Ensure(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Changed) > 0 {
				t.Errorf("second ensure of %s changed %q", m.Context, r.Changed)
			}
			o := observeCounted(ctx, t, k, m)
			if d := o.Drift(m); len(d) > 0 {
				t.Errorf("%s after ensure: drift %q", m.Context, d)
			}
			if o.Quota.Hard != int64(m.Capacity) || o.Quota.Used != 0 || !o.NamespaceExists {
				t.Errorf("%s observed %+v quota %+v", m.Context, o, *o.Quota)
			}
		}
	})

	t.Run("drift", func(t *testing.T) {
		q, err := csA.CoreV1().ResourceQuotas("jobs").Get(ctx, QuotaName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		q.Spec.Hard[JobCount] = *resourceOf(5)
		if _, err := csA.CoreV1().ResourceQuotas("jobs").Update(ctx, q, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		o, err := k.Observe(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"quota poolc-jobs allows 5 Jobs, the pool says 2"}
		if d := o.Drift(a); !slices.Equal(d, want) {
			t.Fatalf("drift after a hand edit = %q, want %q", d, want)
		}
		r, err := k.Ensure(ctx, a)
		if err != nil || !slices.Equal(r.Changed, []string{"quota poolc-jobs updated: count/jobs.batch=5 → count/jobs.batch=2"}) {
			t.Fatalf("ensure after the edit: %q %v", r.Changed, err)
		}
	})

	t.Run("capacity change is in place", func(t *testing.T) {
		before, err := csA.CoreV1().ResourceQuotas("jobs").Get(ctx, QuotaName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a4 := a
		a4.Capacity = 4
		r, err := k.Ensure(ctx, a4)
		if err != nil || !slices.Equal(r.Changed, []string{"quota poolc-jobs updated: count/jobs.batch=2 → count/jobs.batch=4"}) {
			t.Fatalf("ensure with capacity 4: %q %v", r.Changed, err)
		}
		after, err := csA.CoreV1().ResourceQuotas("jobs").Get(ctx, QuotaName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.UID != before.UID {
			t.Errorf("the quota was replaced (uid %s → %s), not updated", before.UID, after.UID)
		}
		if o := observeCounted(ctx, t, k, a4); o.Quota.Hard != 4 {
			t.Errorf("observed hard %d, want 4", o.Quota.Hard)
		}
		a = a4
	})

	t.Run("remove refuses while Jobs run", func(t *testing.T) {
		// Without a scheduler the Job's pod never runs: the Job stays active.
		must(t)(csA.BatchV1().Jobs("jobs").Create(ctx, testJobFor("busy", a.Pool), metav1.CreateOptions{}))
		_, err := k.Remove(ctx, a, RemoveOptions{})
		var running *JobsRunningError
		if !errors.As(err, &running) || !slices.Equal(running.Jobs, []string{"busy"}) {
			t.Fatalf("remove with a running Job: err = %v, want a JobsRunningError naming busy", err)
		}
		if o, err := k.Observe(ctx, a); err != nil || len(o.Drift(a)) > 0 {
			t.Fatalf("a refused remove changed the member: %+v %v", o, err)
		}
	})

	t.Run("remove with drain", func(t *testing.T) {
		r, err := k.Remove(ctx, a, RemoveOptions{Drain: true, Poll: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"drained 1 Jobs of namespace jobs",
			"quota poolc-jobs deleted",
			"limit range poolc-pod-memory deleted",
			"configmap kube-public/local-registry-hosting deleted",
			"namespace jobs deleted",
		}
		if !slices.Equal(r.Changed, want) {
			t.Fatalf("remove member-a: %q, want %q", r.Changed, want)
		}
		if _, err := csA.CoreV1().Namespaces().Get(ctx, "jobs", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("namespace jobs still there: %v", err)
		}
		o, err := k.Observe(ctx, a)
		if err != nil || o.NamespaceExists || o.Registry != "" {
			t.Fatalf("observed after remove: %+v %v", o, err)
		}
	})

	t.Run("remove leaves what poolc did not make", func(t *testing.T) {
		// A Job of someone else in a namespace poolc did not make does not
		// hold the pool's removal up.
		must(t)(csB.BatchV1().Jobs("jobs").Create(ctx, testJobFor("theirs", ""), metav1.CreateOptions{}))
		r, err := k.Remove(ctx, b, RemoveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"quota poolc-jobs deleted", "limit range poolc-pod-memory deleted"}
		if !slices.Equal(r.Changed, want) {
			t.Fatalf("remove member-b: %q, want %q", r.Changed, want)
		}
		if _, err := csB.CoreV1().ConfigMaps("jobs").Get(ctx, "theirs", metav1.GetOptions{}); err != nil {
			t.Errorf("the hand-made ConfigMap is gone: %v", err)
		}
		if _, err := csB.BatchV1().Jobs("jobs").Get(ctx, "theirs", metav1.GetOptions{}); err != nil {
			t.Errorf("the other Job is gone: %v", err)
		}
		cm, err := csB.CoreV1().ConfigMaps(RegistryNamespace).Get(ctx, RegistryConfigMap, metav1.GetOptions{})
		if err != nil || cm.Data[RegistryKey] != k3dDoc {
			t.Errorf("k3d's registry ConfigMap: %v", err)
		}
		if _, err := csB.CoreV1().Namespaces().Get(ctx, "jobs", metav1.GetOptions{}); err != nil {
			t.Errorf("the namespace poolc did not make is gone: %v", err)
		}
	})

	t.Run("unknown context", func(t *testing.T) {
		_, err := k.Ensure(ctx, Member{Pool: "harness", Context: "member-c", Namespace: "jobs", Capacity: 1})
		var ce *ContextError
		if !errors.As(err, &ce) || !ce.Missing || !strings.Contains(err.Error(), `"member-c"`) || !strings.Contains(err.Error(), "member-a, member-b") {
			t.Fatalf("ensure on a missing context: %v", err)
		}
	})
}

// must returns a function failing t when a call returns an error.
func must(t *testing.T) func(any, error) {
	return func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkObjects checks every object Ensure makes for m, as the API server
// holds it.
func checkObjects(ctx context.Context, t *testing.T, cs kubernetes.Interface, m Member) {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Get(ctx, m.Namespace, metav1.GetOptions{})
	if err != nil || !ours(ns.Labels, m.Pool) {
		t.Fatalf("namespace: %v %v", ns.Labels, err)
	}
	q, err := cs.CoreV1().ResourceQuotas(m.Namespace).Get(ctx, QuotaName, metav1.GetOptions{})
	if err != nil || !ours(q.Labels, m.Pool) {
		t.Fatalf("quota: %v", err)
	}
	if h := q.Spec.Hard[JobCount]; h.Value() != int64(m.Capacity) || len(q.Spec.Hard) != 1 {
		t.Errorf("quota hard = %v, want %s=%d", q.Spec.Hard, JobCount, m.Capacity)
	}
	lr, err := cs.CoreV1().LimitRanges(m.Namespace).Get(ctx, LimitRangeName, metav1.GetOptions{})
	if err != nil || !ours(lr.Labels, m.Pool) {
		t.Fatalf("limit range: %v", err)
	}
	want, _ := m.PodMemory()
	if got := limitMemory(lr); got != want.String() {
		t.Errorf("limit range memory %q, want %q", got, want.String())
	}
	cm, err := cs.CoreV1().ConfigMaps(RegistryNamespace).Get(ctx, RegistryConfigMap, metav1.GetOptions{})
	if err != nil || !ours(cm.Labels, m.Pool) {
		t.Fatalf("registry configmap: %v", err)
	}
	h, err := ParseRegistryHosting([]byte(cm.Data[RegistryKey]))
	if err != nil || h.Registry() != m.Registry || h.Host != "localhost:"+m.Registry[strings.LastIndex(m.Registry, ":")+1:] {
		t.Errorf("registry document %q: %+v %v", cm.Data[RegistryKey], h, err)
	}
	// A pod without limits gets the pool's memory from the LimitRange,
	// as the API server's LimitRanger admits it.
	pod, err := cs.CoreV1().Pods(m.Namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run pod: %v", err)
	}
	if l := pod.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]; l.Cmp(want) != 0 {
		t.Errorf("a pod's memory limit = %s, want %s", l.String(), want.String())
	}
}

// observeCounted observes m until the quota controller has counted its
// quota.
func observeCounted(ctx context.Context, t *testing.T, k *Kubeconfig, m Member) Observed {
	t.Helper()
	for {
		o, err := k.Observe(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if o.Quota != nil && o.Quota.Counted {
			return o
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: the quota was never counted: %+v", m.Context, o)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
