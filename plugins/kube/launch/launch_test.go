package launch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"poolc.dev/poolc/internal/testing/syncbuf"
	"poolc.dev/poolc/plugins/kube"
)

// fakeMember is a fake clientset whose Job creates are refused over a
// cap, with the refusal the ResourceQuota admission plugin gives; the
// real enforcement is checked against a real API server in the e2e test.
type fakeMember struct {
	mu   sync.Mutex
	cs   *fake.Clientset
	cap  int64
	jobs int64 // Jobs that hold a slot
	made int   // Jobs ever made, for their names
}

func newFakeMember(ns string, cap int64) *fakeMember {
	f := &fakeMember{cap: cap}
	f.cs = fake.NewSimpleClientset(&corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: kube.QuotaName, Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{kube.JobCount: *resource.NewQuantity(cap, resource.DecimalSI)}},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{kube.JobCount: *resource.NewQuantity(cap, resource.DecimalSI)},
			Used: corev1.ResourceList{kube.JobCount: *resource.NewQuantity(0, resource.DecimalSI)},
		},
	})
	f.cs.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.jobs >= f.cap {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "x",
				fmt.Errorf("exceeded quota: %s, requested: count/jobs.batch=1, used: count/jobs.batch=%d, limited: count/jobs.batch=%d", kube.QuotaName, f.jobs, f.cap))
		}
		f.jobs++
		f.made++
		f.setUsed(a.GetNamespace())
		j := a.(k8stesting.CreateAction).GetObject().(*batchv1.Job).DeepCopy()
		if j.Name == "" {
			j.Name = j.GenerateName + fmt.Sprint(f.made)
		}
		err := f.cs.Tracker().Create(schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, j, a.GetNamespace())
		return true, j, err
	})
	return f
}

// finish frees one slot, as the TTL controller deleting a finished Job
// and the quota controller recounting do.
func (f *fakeMember) finish(t *testing.T, ns string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gvr := schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	jobs, err := f.cs.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(jobs.Items) == 0 {
		t.Fatalf("no Job to finish: %v", err)
	}
	if err := f.cs.Tracker().Delete(gvr, ns, jobs.Items[0].Name); err != nil {
		t.Fatal(err)
	}
	f.jobs--
	f.setUsed(ns)
}

func (f *fakeMember) setUsed(ns string) {
	q, _ := f.cs.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}, ns, kube.QuotaName)
	rq := q.(*corev1.ResourceQuota).DeepCopy()
	rq.Status.Used[kube.JobCount] = *resource.NewQuantity(f.jobs, resource.DecimalSI)
	_ = f.cs.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}, rq, ns)
}

type fakeClients map[string]*fakeMember

func (c fakeClients) Client(_ context.Context, name string) (kubernetes.Interface, error) {
	f, ok := c[name]
	if !ok {
		return nil, &kube.ContextError{Context: name, Missing: true, Detail: "test"}
	}
	return f.cs, nil
}

func pool() []kube.Member {
	return []kube.Member{
		{Pool: "harness", Context: "a", Namespace: "jobs", Capacity: 1},
		{Pool: "harness", Context: "b", Namespace: "jobs", Capacity: 2},
	}
}

func job() *batchv1.Job {
	return &batchv1.Job{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "main", Image: "harness"}},
	}}}}
}

func TestSubmitFillsMembersInPriorityOrder(t *testing.T) {
	cl := fakeClients{"a": newFakeMember("jobs", 1), "b": newFakeMember("jobs", 2)}
	ctx := context.Background()
	var got []string
	for range 3 {
		p, err := Submit(ctx, cl, pool(), job(), Options{Timeout: time.Second, Poll: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Context+" after "+strings.Join(p.Refused, ","))
	}
	want := []string{"a after ", "b after a", "b after a"}
	if !slices.Equal(got, want) {
		t.Fatalf("placements %q, want %q", got, want)
	}
	j, err := cl["a"].cs.BatchV1().Jobs("jobs").List(ctx, metav1.ListOptions{})
	if err != nil || len(j.Items) != 1 {
		t.Fatalf("jobs on a: %v %v", j, err)
	}
	created := j.Items[0]
	if created.Labels[kube.LabelPodPool] != "harness" || created.Labels[kube.LabelManagedBy] != kube.ManagedBy ||
		created.GenerateName != "harness-" || created.Spec.TTLSecondsAfterFinished == nil || *created.Spec.TTLSecondsAfterFinished != DefaultTTL {
		t.Fatalf("created Job %+v", created.ObjectMeta)
	}
}

func TestSubmitWaitsForRoomAndSaysSo(t *testing.T) {
	cl := fakeClients{"a": newFakeMember("jobs", 1), "b": newFakeMember("jobs", 2)}
	ctx := context.Background()
	for range 3 {
		if _, err := Submit(ctx, cl, pool(), job(), Options{Poll: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	var progress syncbuf.Buffer
	done := make(chan Placed)
	go func() {
		p, err := Submit(ctx, cl, pool(), job(), Options{Poll: time.Millisecond, Progress: &progress, ProgressEvery: time.Millisecond})
		if err != nil {
			t.Error(err)
		}
		done <- p
	}()
	// Free a place only once the launcher has said it waits, however
	// slowly a loaded machine schedules it.
	const waiting = "waiting for room in pod pool harness: a 1/1, b 2/2; waited"
	for deadline := time.Now().Add(time.Minute); !strings.Contains(progress.String(), waiting); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no waiting line after a minute; progress %q", progress.String())
		}
	}
	cl["b"].finish(t, "jobs")
	if p := <-done; p.Context != "b" || p.Waited <= 0 {
		t.Fatalf("placed %+v, want b after a wait", p)
	}
}

func TestSubmitTimesOutWhenAllStayFull(t *testing.T) {
	cl := fakeClients{"a": newFakeMember("jobs", 1), "b": newFakeMember("jobs", 2)}
	ctx := context.Background()
	for range 3 {
		if _, err := Submit(ctx, cl, pool(), job(), Options{Poll: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Submit(ctx, cl, pool(), job(), Options{Timeout: 20 * time.Millisecond, Poll: time.Millisecond})
	var full *FullError
	if !errors.As(err, &full) || full.Waited < 20*time.Millisecond {
		t.Fatalf("err = %v", err)
	}
	// The wait it reports is what it waited: 0s, or 1s on a machine too
	// loaded to poll again within half a second.
	if want := fmt.Sprintf("pod pool harness: every member stayed full for %s (a 1/1, b 2/2)", full.Waited.Round(time.Second)); !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %q, want %q", err, want)
	}
}

func TestSubmitSkipsAnUnreachableMember(t *testing.T) {
	cl := fakeClients{"b": newFakeMember("jobs", 2)}
	p, err := Submit(context.Background(), cl, pool(), job(), Options{Poll: time.Millisecond})
	if err != nil || p.Context != "b" {
		t.Fatalf("placed %+v %v, want b", p, err)
	}
	_, err = Submit(context.Background(), fakeClients{}, pool(), job(), Options{Poll: time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), `no member can take Jobs: kube context "a" is not in the kubeconfig`) {
		t.Fatalf("err = %v", err)
	}
}

func TestQuotaRefusal(t *testing.T) {
	gr := schema.GroupResource{Group: "batch", Resource: "jobs"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewForbidden(gr, "x", errors.New("exceeded quota: poolc-jobs, requested: count/jobs.batch=1")), true},
		{apierrors.NewForbidden(gr, "x", errors.New("status unknown for quota: poolc-jobs, resource: count/jobs.batch")), true},
		{apierrors.NewForbidden(gr, "x", errors.New("User cannot create resource")), false},
		{apierrors.NewNotFound(gr, "x"), false},
		{errors.New("exceeded quota"), false},
	} {
		if got := QuotaRefusal(tc.err); got != tc.want {
			t.Errorf("QuotaRefusal(%v) = %v", tc.err, got)
		}
	}
}
