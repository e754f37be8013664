package kube

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/clientcmd"
)

// withFake is a Kubeconfig whose context "fake" is a fake clientset
// holding objs. The fake does not enforce quotas or delete namespaces'
// contents: the e2e tests check those against a real API server.
func withFake(objs ...runtime.Object) (*Kubeconfig, kubernetes.Interface) {
	cs := fake.NewSimpleClientset(objs...)
	return &Kubeconfig{
		rules:   clientcmd.NewDefaultClientConfigLoadingRules(),
		clients: map[string]kubernetes.Interface{"fake": cs},
		mds:     map[string]metadata.Interface{"fake": metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())},
	}, cs
}

func member() Member {
	return Member{Pool: "harness", Context: "fake", Namespace: "jobs", Capacity: 2, Registry: "k3d-reg:5051", PodMemoryGB: 1.5}
}

func TestEnsureTwiceChangesNothing(t *testing.T) {
	k, _ := withFake()
	ctx := context.Background()
	r, err := k.Ensure(ctx, member())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Changed) != 4 {
		t.Fatalf("first ensure: %q, want four objects made", r.Changed)
	}
	r, err = k.Ensure(ctx, member())
	if err != nil || len(r.Changed) != 0 || len(r.Warnings) != 0 {
		t.Fatalf("second ensure: %q %q %v, want no change", r.Changed, r.Warnings, err)
	}
	o, err := k.Observe(ctx, member())
	if err != nil {
		t.Fatal(err)
	}
	if d := o.Drift(member()); len(d) > 0 {
		t.Fatalf("drift after ensure: %q", d)
	}
	if o.PodMemory != "1500M" || o.Registry != "k3d-reg:5051" || !o.RegistryOurs || !o.NamespaceOurs {
		t.Fatalf("observed %+v", o)
	}
}

func TestEnsureChangesOnlyWhatDiffers(t *testing.T) {
	k, _ := withFake()
	ctx := context.Background()
	if _, err := k.Ensure(ctx, member()); err != nil {
		t.Fatal(err)
	}
	m := member()
	m.Capacity, m.PodMemoryGB, m.Registry = 5, 0, ""
	r, err := k.Ensure(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"quota poolc-jobs updated: count/jobs.batch=2 → count/jobs.batch=5",
		"limit range poolc-pod-memory deleted: the pool sets no pod memory",
		"configmap kube-public/local-registry-hosting deleted: the member has no registry",
	}
	if !slices.Equal(r.Changed, want) {
		t.Fatalf("ensure after the change: %q, want %q", r.Changed, want)
	}
}

func TestEnsureRefusesAnotherPoolsNamespace(t *testing.T) {
	k, _ := withFake(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "jobs",
		Labels: map[string]string{LabelManagedBy: ManagedBy, LabelPodPool: "other"}}})
	_, err := k.Ensure(context.Background(), member())
	if err == nil || !strings.Contains(err.Error(), "namespace jobs belongs to pod pool other") {
		t.Fatalf("err = %v", err)
	}
}

func TestEnsureWaitsOutATerminatingNamespace(t *testing.T) {
	k, _ := withFake(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "jobs"},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}})
	_, err := k.Ensure(context.Background(), member())
	if err == nil || !strings.Contains(err.Error(), "is being deleted") {
		t.Fatalf("err = %v", err)
	}
}

func TestEnsureLeavesAForeignRegistryConfigMap(t *testing.T) {
	doc := RegistryHosting{Host: "localhost:5000", HostFromClusterNetwork: "kind-registry:5000"}.Render()
	k, cs := withFake(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: RegistryConfigMap, Namespace: RegistryNamespace},
		Data: map[string]string{RegistryKey: doc}})
	r, err := k.Ensure(context.Background(), member())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], `names registry "kind-registry:5000", not k3d-reg:5051`) {
		t.Fatalf("warnings %q", r.Warnings)
	}
	cm, _ := cs.CoreV1().ConfigMaps(RegistryNamespace).Get(context.Background(), RegistryConfigMap, metav1.GetOptions{})
	if cm.Data[RegistryKey] != doc {
		t.Fatalf("the foreign ConfigMap was rewritten: %q", cm.Data[RegistryKey])
	}
	o, _ := k.Observe(context.Background(), member())
	if d := o.Drift(member()); len(d) > 0 {
		t.Fatalf("a registry someone else publishes is not drift: %q", d)
	}
}

func TestMemberCheck(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Member)
		want string
	}{
		{func(m *Member) { m.Context = "" }, "has no kube context"},
		{func(m *Member) { m.Namespace = "Jobs_1" }, `namespace "Jobs_1"`},
		{func(m *Member) { m.Pool = "" }, "cannot be a label value"},
		{func(m *Member) { m.Capacity = 0 }, "capacity 0, want at least 1"},
		{func(m *Member) { m.Registry = "k3d-reg" }, "is not NAME:PORT"},
		{func(m *Member) { m.PodMemoryGB = -1 }, "is negative"},
	} {
		m := member()
		tc.edit(&m)
		if err := m.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", m, err, tc.want)
		}
	}
	if err := member().Check(); err != nil {
		t.Errorf("a valid member: %v", err)
	}
}

func TestDrift(t *testing.T) {
	m := member()
	ok := Observed{NamespaceExists: true, Quota: &Quota{Hard: 2}, PodMemory: "1500M", Registry: "k3d-reg:5051", RegistryOurs: true}
	if d := ok.Drift(m); len(d) > 0 {
		t.Fatalf("no drift expected: %q", d)
	}
	for _, tc := range []struct {
		edit func(*Observed)
		want string
	}{
		{func(o *Observed) { o.NamespaceExists = false }, "namespace jobs is missing"},
		{func(o *Observed) { o.Quota = nil }, "quota poolc-jobs is missing"},
		{func(o *Observed) { o.Quota = &Quota{Hard: 7} }, "quota poolc-jobs allows 7 Jobs, the pool says 2"},
		{func(o *Observed) { o.Quota = &Quota{Hard: 2, Extra: true} }, "quota poolc-jobs allows 2 Jobs, the pool says 2"},
		{func(o *Observed) { o.PodMemory = "" }, "pod memory limit none, the pool says 1500M"},
		{func(o *Observed) { o.Registry = "k3d-reg:9999" }, "registry k3d-reg:9999, the pool says k3d-reg:5051"},
		{func(o *Observed) { o.Registry, o.RegistryOurs = "", false }, "registry none, the pool says k3d-reg:5051"},
	} {
		o := ok
		tc.edit(&o)
		if d := o.Drift(m); len(d) != 1 || d[0] != tc.want {
			t.Errorf("drift %q, want %q", d, tc.want)
		}
	}
}

func TestRemoveRefusesWhileThePoolsJobsRun(t *testing.T) {
	k, _ := withFake()
	ctx := context.Background()
	if _, err := k.Ensure(ctx, member()); err != nil {
		t.Fatal(err)
	}
	cs := k.clients["fake"]
	for _, name := range []string{"j1", "j2", "j3", "j4", "j5", "j6", "j7"} {
		j := testJobFor(name, "harness")
		if _, err := cs.BatchV1().Jobs("jobs").Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := k.Remove(ctx, member(), RemoveOptions{})
	var running *JobsRunningError
	if !errors.As(err, &running) || len(running.Jobs) != 7 {
		t.Fatalf("err = %v", err)
	}
	want := "member fake: 7 Jobs still run in namespace jobs (j1, j2, j3, j4, j5 and 2 more); let them finish, or set drain_on_remove = true in the kube plugin's config to delete them"
	if err.Error() != want {
		t.Fatalf("message\n%s\nwant\n%s", err, want)
	}
}

// testJobFor is a Job of one busybox pod, labelled as the pool's when
// pool is set.
func testJobFor(name, pool string) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
		}}},
	}
	if pool != "" {
		j.Labels = map[string]string{LabelManagedBy: ManagedBy, LabelPodPool: pool}
	}
	return j
}

func FuzzParseRegistryHosting(f *testing.F) {
	f.Add([]byte(RegistryHosting{Host: "localhost:5051", HostFromClusterNetwork: "k3d-reg:5051"}.Render()))
	f.Add([]byte(`{"host": "localhost:5000", "help": "https://example.invalid"}`))
	f.Add([]byte("host: [unclosed"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		h, err := ParseRegistryHosting(doc)
		if err != nil {
			return
		}
		// What parses renders, and reads back the same.
		back, err := ParseRegistryHosting([]byte(h.Render()))
		if err != nil || back != h {
			t.Fatalf("round trip of %+v: %+v %v", h, back, err)
		}
	})
}
