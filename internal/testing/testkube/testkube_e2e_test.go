//go:build e2e

package testkube

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// TestE2EClustersEnforceQuotaAndRunJobs checks what the kube tests rely
// on: two API servers behind two contexts of one kubeconfig, a Job quota
// the API server enforces (with the controller manager), and kwok running
// a Job's pod to completion.
func TestE2EClustersEnforceQuotaAndRunJobs(t *testing.T) {
	start := time.Now()
	e := Start(t, Options{Clusters: []string{"one", "two"}, Kwok: true, RunFor: 500 * time.Millisecond})
	t.Logf("started %s in %s", e.Describe(), time.Since(start).Round(time.Millisecond))
	cfg, err := clientcmd.LoadFromFile(e.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Contexts) != 2 || cfg.Contexts["one"] == nil || cfg.Contexts["two"] == nil {
		t.Fatalf("kubeconfig contexts = %v, want one and two", cfg.Contexts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := e.Cluster("two").Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "q"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().ResourceQuotas("q").Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "jobs"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/jobs.batch": resource.MustParse("2")}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		q, err := cs.CoreV1().ResourceQuotas("q").Get(ctx, "jobs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := q.Status.Hard["count/jobs.batch"]; ok {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the quota controller never counted the quota")
		}
		time.Sleep(100 * time.Millisecond)
	}
	job := func(name string, sleep bool) *batchv1.Job {
		ttl := int32(0)
		j := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
			}}},
		}
		if !sleep {
			j.Spec.TTLSecondsAfterFinished = &ttl
		}
		return j
	}
	for _, n := range []string{"a", "b"} {
		if _, err := cs.BatchV1().Jobs("q").Create(ctx, job(n, true), metav1.CreateOptions{}); err != nil {
			t.Fatalf("job %s: %v", n, err)
		}
	}
	_, err = cs.BatchV1().Jobs("q").Create(ctx, job("c", true), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("third Job against a quota of 2: err = %v, want a quota refusal", err)
	}
	// A Job runs to completion on the kwok node.
	for {
		j, err := cs.BatchV1().Jobs("q").Get(context.Background(), "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Succeeded == 1 {
			break
		}
		if ctx.Err() != nil {
			pods, _ := cs.CoreV1().Pods("q").List(context.Background(), metav1.ListOptions{})
			t.Fatalf("Job a never succeeded: status %+v; pods %+v", j.Status, pods.Items)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("a Job ran to completion %s after start", time.Since(start).Round(time.Millisecond))

	// count/jobs.batch counts a finished Job until it is deleted: with
	// Job a complete, a third Job is still refused.
	_, err = cs.BatchV1().Jobs("q").Create(ctx, job("c", true), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("a third Job beside a finished one: err = %v, want a quota refusal (the finished Job still counts)", err)
	}
	if q, err := cs.CoreV1().ResourceQuotas("q").Get(ctx, "jobs", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if used := q.Status.Used["count/jobs.batch"]; used.Value() != 2 {
		t.Errorf("quota use with one Job finished, one running: %s, want 2", used.String())
	}
	// Deleting the finished Job frees its slot; a Job with
	// ttlSecondsAfterFinished frees its own when it finishes.
	bg := metav1.DeletePropagationBackground
	if err := cs.BatchV1().Jobs("q").Delete(ctx, "a", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	for {
		_, err = cs.BatchV1().Jobs("q").Create(ctx, job("d", false), metav1.CreateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsForbidden(err) || ctx.Err() != nil {
			t.Fatalf("Job d after deleting Job a: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		_, err := cs.BatchV1().Jobs("q").Get(ctx, "d", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("Job d (ttlSecondsAfterFinished 0) was never deleted after finishing: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("a Job with ttlSecondsAfterFinished: 0 was deleted %s after start", time.Since(start).Round(time.Millisecond))
}

// TestE2EBareAPIServerDoesNotEnforceQuota checks why testkube runs the
// controller manager: an API server alone never fills in a quota's
// status, and admits a third Job against a limit of 2.
func TestE2EBareAPIServerDoesNotEnforceQuota(t *testing.T) {
	e := Start(t, Options{Clusters: []string{"bare"}, BareAPIServer: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs := e.Cluster("bare").Client
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "q"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := cs.CoreV1().ResourceQuotas("q").Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "jobs"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/jobs.batch": resource.MustParse("2")}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c"} {
		j := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
			}}},
		}
		if _, err := cs.BatchV1().Jobs("q").Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatalf("Job %s: %v; a bare API server was expected to admit it", n, err)
		}
	}
	// The controller manager counts a new quota within a second here;
	// without it the status stays empty.
	time.Sleep(3 * time.Second)
	q, err := cs.CoreV1().ResourceQuotas("q").Get(ctx, "jobs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Status.Hard) != 0 || len(q.Status.Used) != 0 {
		t.Errorf("quota status %+v, want it empty without the controller manager", q.Status)
	}
}
