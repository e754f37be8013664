package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"poolc.dev/poolc/internal/plural"
)

// JobsRunningError is the refusal to remove a member while Jobs run in its
// namespace.
type JobsRunningError struct {
	Context, Namespace string
	Jobs               []string
}

// Error implements error.
func (e *JobsRunningError) Error() string {
	shown := e.Jobs
	if len(shown) > 5 {
		shown = shown[:5]
	}
	more := ""
	if n := len(e.Jobs) - len(shown); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	// Remove names the member (Context) in front of this.
	n := len(e.Jobs)
	return fmt.Sprintf("%s still %s in namespace %s (%s%s); let %s finish, or set drain_on_remove = true in the kube plugin's config to delete %s",
		plural.Count(n, "Job"), plural.Agree(n, "runs", "run"), e.Namespace, strings.Join(shown, ", "), more, plural.Agree(n, "it", "them"), plural.Agree(n, "it", "them"))
}

// RemoveOptions says how to remove a member.
type RemoveOptions struct {
	// Drain deletes the Jobs that still run instead of refusing.
	Drain bool
	// Poll is how often removal checks that the namespace is gone; zero
	// means a second.
	Poll time.Duration
}

// Remove takes down what Ensure set up for the member and nothing else:
// the quota, limit range, admission lease and registry ConfigMap poolc labelled for the
// pool, and the namespace when poolc made it (then it waits until the
// namespace controller has deleted it, and everything in it). While Jobs
// that have not finished are in the namespace it refuses with a
// *JobsRunningError, unless opts.Drain, which deletes them: in a namespace
// poolc made that is every Job there (deleting the namespace would take
// them anyway), elsewhere only the Jobs labelled as the pool's.
func (k *Kubeconfig) Remove(ctx context.Context, m Member, opts RemoveOptions) (Result, error) {
	var r Result
	cs, err := k.Client(ctx, m.Context)
	if err != nil {
		return r, err
	}
	if err := remove(ctx, cs, m, opts, &r); err != nil {
		return r, fmt.Errorf("member %s: %w", m.Context, err)
	}
	return r, nil
}

func remove(ctx context.Context, cs kubernetes.Interface, m Member, opts RemoveOptions, r *Result) error {
	ns, err := cs.CoreV1().Namespaces().Get(ctx, m.Namespace, metav1.GetOptions{})
	nsGone := apierrors.IsNotFound(err)
	if err != nil && !nsGone {
		return fmt.Errorf("namespace %s: %w", m.Namespace, err)
	}
	if !nsGone {
		// Deleting a namespace poolc made deletes every Job in it; in one
		// it did not make, only the pool's Jobs are its business.
		selector := LabelPodPool + "=" + m.Pool
		if ours(ns.Labels, m.Pool) {
			selector = ""
		}
		running, err := RunningJobs(ctx, cs, m.Namespace, selector)
		if err != nil {
			return err
		}
		if len(running) > 0 && !opts.Drain {
			return &JobsRunningError{Context: m.Context, Namespace: m.Namespace, Jobs: running}
		}
		if len(running) > 0 {
			// Background propagation lets the garbage collector delete
			// the Jobs' pods.
			bg := metav1.DeletePropagationBackground
			err := cs.BatchV1().Jobs(m.Namespace).DeleteCollection(ctx,
				metav1.DeleteOptions{PropagationPolicy: &bg},
				metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return fmt.Errorf("drain Jobs of %s: %w", m.Namespace, err)
			}
			r.changed("drained %d Jobs of namespace %s", len(running), m.Namespace)
		}
		core := cs.CoreV1()
		if q, err := core.ResourceQuotas(m.Namespace).Get(ctx, QuotaName, metav1.GetOptions{}); err == nil && ours(q.Labels, m.Pool) {
			if err := core.ResourceQuotas(m.Namespace).Delete(ctx, QuotaName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete quota %s: %w", QuotaName, err)
			}
			r.changed("quota %s deleted", QuotaName)
		} else if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("quota %s: %w", QuotaName, err)
		}
		if lr, err := core.LimitRanges(m.Namespace).Get(ctx, LimitRangeName, metav1.GetOptions{}); err == nil && ours(lr.Labels, m.Pool) {
			if err := core.LimitRanges(m.Namespace).Delete(ctx, LimitRangeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete limit range %s: %w", LimitRangeName, err)
			}
			r.changed("limit range %s deleted", LimitRangeName)
		} else if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("limit range %s: %w", LimitRangeName, err)
		}
		leases := cs.CoordinationV1().Leases(m.Namespace)
		if l, err := leases.Get(ctx, AdmissionLease, metav1.GetOptions{}); err == nil && ours(l.Labels, m.Pool) {
			if err := leases.Delete(ctx, AdmissionLease, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete lease %s: %w", AdmissionLease, err)
			}
			r.changed("lease %s deleted", AdmissionLease)
		} else if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("lease %s: %w", AdmissionLease, err)
		}
	}
	cm, err := cs.CoreV1().ConfigMaps(RegistryNamespace).Get(ctx, RegistryConfigMap, metav1.GetOptions{})
	switch {
	case err == nil && ours(cm.Labels, m.Pool):
		if err := cs.CoreV1().ConfigMaps(RegistryNamespace).Delete(ctx, RegistryConfigMap, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete configmap %s/%s: %w", RegistryNamespace, RegistryConfigMap, err)
		}
		r.changed("configmap %s/%s deleted", RegistryNamespace, RegistryConfigMap)
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("configmap %s/%s: %w", RegistryNamespace, RegistryConfigMap, err)
	}
	if nsGone || !ours(ns.Labels, m.Pool) {
		return nil
	}
	if ns.DeletionTimestamp == nil {
		if err := cs.CoreV1().Namespaces().Delete(ctx, m.Namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete namespace %s: %w", m.Namespace, err)
		}
		r.changed("namespace %s deleted", m.Namespace)
	}
	return waitNamespaceGone(ctx, cs, m.Namespace, opts.Poll)
}

func waitNamespaceGone(ctx context.Context, cs kubernetes.Interface, name string, poll time.Duration) error {
	if poll <= 0 {
		poll = time.Second
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		_, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s is still being deleted (is kube-controller-manager running?): %w", name, ctx.Err())
		case <-t.C:
		}
	}
}

// RunningJobs lists the names of the Jobs in the namespace that match
// the label selector ("" matches all) and have not finished (no Complete
// or Failed condition), sorted.
func RunningJobs(ctx context.Context, cs kubernetes.Interface, namespace, selector string) ([]string, error) {
	jobs, err := cs.BatchV1().Jobs(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list Jobs of %s: %w", namespace, err)
	}
	var out []string
	for i := range jobs.Items {
		if !Finished(&jobs.Items[i]) {
			out = append(out, jobs.Items[i].Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Finished reports whether the Job has completed or failed.
func Finished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
