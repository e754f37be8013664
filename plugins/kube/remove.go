package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

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
	// DeleteForeign deletes the namespace poolc made even when it holds
	// objects poolc did not make (they go with it). Without it such a
	// namespace is kept: poolc's objects in it are deleted and its poolc
	// labels taken off.
	DeleteForeign bool
	// Poll is how often removal checks that the namespace is gone; zero
	// means a second.
	Poll time.Duration
}

// Removal is what removing a member does, found by reading its cluster
// and changing nothing: the objects poolc labelled for the pool that are
// there, the unfinished Jobs in the way, and whether the namespace goes.
type Removal struct {
	Context, Namespace string
	// Deletes names the objects it deletes, in order ("quota poolc-jobs").
	Deletes []string
	// Running are the unfinished Jobs that refuse it without Drain.
	Running []string
	// Foreign are the objects in a namespace poolc made that poolc did
	// not make (RESOURCE/NAME); KeptWhy says why the namespace is kept
	// ("" when it goes, or was never poolc's to delete).
	Foreign []string
	KeptWhy string

	nsExists, nsOurs, nsDeleting bool
	selector                     string
	quota, limitRange, lease, cm bool
}

// String says in one line what the removal deletes and keeps.
func (r Removal) String() string {
	var b strings.Builder
	if len(r.Deletes) == 0 {
		b.WriteString("deletes nothing")
	} else {
		b.WriteString("deletes " + strings.Join(r.Deletes, ", "))
	}
	if len(r.Running) > 0 {
		fmt.Fprintf(&b, " (%s still %s)", plural.Count(len(r.Running), "Job"), plural.Agree(len(r.Running), "runs", "run"))
	}
	if r.KeptWhy != "" {
		b.WriteString("; keeps namespace " + r.Namespace + ": " + r.KeptWhy)
	}
	return b.String()
}

// PlanRemove reads what Remove would do to the member, changing nothing.
func (k *Kubeconfig) PlanRemove(ctx context.Context, m Member, opts RemoveOptions) (Removal, error) {
	cs, md, err := k.withMetadata(ctx, m.Context)
	if err != nil {
		return Removal{}, err
	}
	rm, err := planRemoval(ctx, cs, md, m, opts)
	if err != nil {
		return rm, fmt.Errorf("member %s: %w", m.Context, err)
	}
	return rm, nil
}

// Remove takes down what Ensure set up for the member and nothing else:
// the quota, limit range, admission lease and registry ConfigMap poolc
// labelled for the pool, and the namespace when poolc made it and it
// holds nothing poolc did not make (then it waits until the namespace
// controller has deleted it, and everything in it). A namespace poolc
// made that holds objects someone else made is kept, its poolc labels
// taken off, unless opts.DeleteForeign. While Jobs that have not finished
// are in the way it refuses with a *JobsRunningError, unless opts.Drain,
// which deletes them: every Job of a namespace that goes (deleting it
// would take them anyway), elsewhere only the Jobs labelled as the
// pool's.
func (k *Kubeconfig) Remove(ctx context.Context, m Member, opts RemoveOptions) (Result, error) {
	var r Result
	cs, md, err := k.withMetadata(ctx, m.Context)
	if err != nil {
		return r, err
	}
	rm, err := planRemoval(ctx, cs, md, m, opts)
	if err == nil {
		err = rm.run(ctx, cs, m, opts, &r)
	}
	if err != nil {
		return r, fmt.Errorf("member %s: %w", m.Context, err)
	}
	return r, nil
}

// planRemoval reads the member's cluster for a removal; md lists the
// namespace's contents (nil: they are unknown, and a namespace poolc
// made is kept unless opts.DeleteForeign).
func planRemoval(ctx context.Context, cs kubernetes.Interface, md metadata.Interface, m Member, opts RemoveOptions) (Removal, error) {
	rm := Removal{Context: m.Context, Namespace: m.Namespace, selector: LabelPodPool + "=" + m.Pool}
	core := cs.CoreV1()
	ns, err := core.Namespaces().Get(ctx, m.Namespace, metav1.GetOptions{})
	switch {
	case err == nil:
		rm.nsExists, rm.nsOurs, rm.nsDeleting = true, ours(ns.Labels, m.Pool), ns.DeletionTimestamp != nil
	case !apierrors.IsNotFound(err):
		return rm, fmt.Errorf("namespace %s: %w", m.Namespace, err)
	}
	if rm.nsExists {
		if q, err := core.ResourceQuotas(m.Namespace).Get(ctx, QuotaName, metav1.GetOptions{}); err == nil {
			rm.quota = ours(q.Labels, m.Pool)
		} else if !apierrors.IsNotFound(err) {
			return rm, fmt.Errorf("quota %s: %w", QuotaName, err)
		}
		if lr, err := core.LimitRanges(m.Namespace).Get(ctx, LimitRangeName, metav1.GetOptions{}); err == nil {
			rm.limitRange = ours(lr.Labels, m.Pool)
		} else if !apierrors.IsNotFound(err) {
			return rm, fmt.Errorf("limit range %s: %w", LimitRangeName, err)
		}
		if l, err := cs.CoordinationV1().Leases(m.Namespace).Get(ctx, AdmissionLease, metav1.GetOptions{}); err == nil {
			rm.lease = ours(l.Labels, m.Pool)
		} else if !apierrors.IsNotFound(err) {
			return rm, fmt.Errorf("lease %s: %w", AdmissionLease, err)
		}
	}
	if cm, err := core.ConfigMaps(RegistryNamespace).Get(ctx, RegistryConfigMap, metav1.GetOptions{}); err == nil {
		rm.cm = ours(cm.Labels, m.Pool)
	} else if !apierrors.IsNotFound(err) {
		return rm, fmt.Errorf("configmap %s/%s: %w", RegistryNamespace, RegistryConfigMap, err)
	}
	deleteNS := rm.nsOurs
	if rm.nsOurs && !rm.nsDeleting {
		var ferr error
		if md == nil {
			ferr = errors.New("no metadata client")
		} else {
			rm.Foreign, ferr = foreignObjects(ctx, cs.Discovery(), md, m.Namespace, m.Pool)
		}
		switch {
		case opts.DeleteForeign:
		case ferr != nil:
			deleteNS, rm.KeptWhy = false, fmt.Sprintf("poolc made it, but what else it holds cannot be read (%v)", ferr)
		case len(rm.Foreign) > 0:
			deleteNS, rm.KeptWhy = false, fmt.Sprintf("poolc made it, but it holds %s poolc did not make (%s); set delete_foreign_on_remove = true in the kube plugin's config to delete it with them",
				plural.Count(len(rm.Foreign), "object"), strings.Join(rm.Foreign, ", "))
		}
	}
	if deleteNS {
		rm.selector = "" // every Job goes with the namespace
	}
	if rm.nsExists {
		if rm.Running, err = RunningJobs(ctx, cs, m.Namespace, rm.selector); err != nil {
			return rm, err
		}
		if len(rm.Running) > 0 && opts.Drain {
			rm.Deletes = append(rm.Deletes, plural.Count(len(rm.Running), "unfinished Job"))
		}
	}
	for _, o := range []struct {
		there bool
		what  string
	}{{rm.quota, "quota " + QuotaName}, {rm.limitRange, "limit range " + LimitRangeName}, {rm.lease, "lease " + AdmissionLease},
		{rm.cm, "configmap " + RegistryNamespace + "/" + RegistryConfigMap}, {deleteNS, "namespace " + m.Namespace}} {
		if o.there {
			rm.Deletes = append(rm.Deletes, o.what)
		}
	}
	if deleteNS && len(rm.Foreign) > 0 {
		rm.Deletes[len(rm.Deletes)-1] += fmt.Sprintf(" with %s poolc did not make (%s)", plural.Count(len(rm.Foreign), "object"), strings.Join(rm.Foreign, ", "))
	}
	return rm, nil
}

// run carries out the removal rm planned.
func (rm Removal) run(ctx context.Context, cs kubernetes.Interface, m Member, opts RemoveOptions, r *Result) error {
	if len(rm.Running) > 0 && !opts.Drain {
		return &JobsRunningError{Context: m.Context, Namespace: m.Namespace, Jobs: rm.Running}
	}
	if len(rm.Running) > 0 {
		// Background propagation lets the garbage collector delete
		// the Jobs' pods.
		bg := metav1.DeletePropagationBackground
		err := cs.BatchV1().Jobs(m.Namespace).DeleteCollection(ctx,
			metav1.DeleteOptions{PropagationPolicy: &bg},
			metav1.ListOptions{LabelSelector: rm.selector})
		if err != nil {
			return fmt.Errorf("drain Jobs of %s: %w", m.Namespace, err)
		}
		r.changed("drained %d Jobs of namespace %s", len(rm.Running), m.Namespace)
	}
	core := cs.CoreV1()
	d := metav1.DeleteOptions{}
	for _, o := range []struct {
		there  bool
		what   string
		delete func() error
	}{
		{rm.quota, "quota " + QuotaName, func() error { return core.ResourceQuotas(m.Namespace).Delete(ctx, QuotaName, d) }},
		{rm.limitRange, "limit range " + LimitRangeName, func() error { return core.LimitRanges(m.Namespace).Delete(ctx, LimitRangeName, d) }},
		{rm.lease, "lease " + AdmissionLease, func() error { return cs.CoordinationV1().Leases(m.Namespace).Delete(ctx, AdmissionLease, d) }},
		{rm.cm, "configmap " + RegistryNamespace + "/" + RegistryConfigMap, func() error { return core.ConfigMaps(RegistryNamespace).Delete(ctx, RegistryConfigMap, d) }},
	} {
		if !o.there {
			continue
		}
		if err := o.delete(); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", o.what, err)
		}
		r.changed("%s deleted", o.what)
	}
	switch {
	case !rm.nsOurs:
		return nil
	case rm.KeptWhy != "":
		ns, err := core.Namespaces().Get(ctx, m.Namespace, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("namespace %s: %w", m.Namespace, err)
		}
		delete(ns.Labels, LabelManagedBy)
		delete(ns.Labels, LabelPodPool)
		if _, err := core.Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("unlabel namespace %s: %w", m.Namespace, err)
		}
		r.warn("namespace %s kept: %s", m.Namespace, rm.KeptWhy)
		return nil
	case !rm.nsDeleting:
		if err := core.Namespaces().Delete(ctx, m.Namespace, d); err != nil && !apierrors.IsNotFound(err) {
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
