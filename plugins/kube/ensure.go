package kube

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Result says what a call changed, one line per object, and what it
// noticed but left alone. Both are empty when nothing needed doing.
type Result struct {
	Changed  []string
	Warnings []string
}

func (r *Result) changed(format string, a ...any) {
	r.Changed = append(r.Changed, fmt.Sprintf(format, a...))
}
func (r *Result) warn(format string, a ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, a...))
}

// Ensure makes the member's cluster hold what the pool needs: the
// namespace, the quota capping its Jobs at the capacity, the pod memory
// LimitRange and the registry ConfigMap. It is idempotent: objects already
// as wanted are not written, so a second call changes nothing; a changed
// capacity updates the quota in place. A namespace poolc did not make is
// used but never labelled or removed; a namespace of another pod pool is
// refused.
func (k *Kubeconfig) Ensure(ctx context.Context, m Member) (Result, error) {
	var r Result
	if err := m.Check(); err != nil {
		return r, err
	}
	if err := k.ensureK3dCluster(ctx, m, &r); err != nil {
		return r, err
	}
	cs, err := k.Client(ctx, m.Context)
	if err != nil {
		return r, err
	}
	steps := []func(context.Context, kubernetes.Interface, Member, *Result) error{
		ensureNamespace, ensureQuota, ensureLimitRange, ensureRegistry,
	}
	for _, step := range steps {
		if err := step(ctx, cs, m, &r); err != nil {
			return r, fmt.Errorf("member %s: %w", m.Context, err)
		}
	}
	return r, nil
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, m Member, r *Result) error {
	ns, err := cs.CoreV1().Namespaces().Get(ctx, m.Namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: m.Namespace, Labels: m.Labels()},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create namespace %s: %w", m.Namespace, err)
		}
		r.changed("namespace %s created", m.Namespace)
		return nil
	case err != nil:
		return fmt.Errorf("namespace %s: %w", m.Namespace, err)
	}
	if ns.Status.Phase == corev1.NamespaceTerminating {
		return fmt.Errorf("namespace %s is being deleted; try again when it is gone", m.Namespace)
	}
	if p := ns.Labels[LabelPodPool]; ns.Labels[LabelManagedBy] == ManagedBy && p != m.Pool {
		return fmt.Errorf("namespace %s belongs to pod pool %s", m.Namespace, p)
	}
	if !ours(ns.Labels, m.Pool) {
		r.warn("namespace %s existed before poolc; poolc uses it and will not delete it", m.Namespace)
	}
	return nil
}

func quotaHard(m Member) corev1.ResourceList {
	return corev1.ResourceList{JobCount: *resource.NewQuantity(int64(m.Capacity), resource.DecimalSI)}
}

func ensureQuota(ctx context.Context, cs kubernetes.Interface, m Member, r *Result) error {
	api := cs.CoreV1().ResourceQuotas(m.Namespace)
	want := quotaHard(m)
	q, err := api.Get(ctx, QuotaName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: QuotaName, Namespace: m.Namespace, Labels: m.Labels()},
			Spec:       corev1.ResourceQuotaSpec{Hard: want},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create quota %s: %w", QuotaName, err)
		}
		r.changed("quota %s created: %s=%d", QuotaName, JobCount, m.Capacity)
		return nil
	case err != nil:
		return fmt.Errorf("quota %s: %w", QuotaName, err)
	}
	if sameResources(q.Spec.Hard, want) && len(q.Spec.Scopes) == 0 && q.Spec.ScopeSelector == nil && hasLabels(q.Labels, m.Labels()) {
		return nil
	}
	before := describeHard(q.Spec.Hard)
	q.Spec = corev1.ResourceQuotaSpec{Hard: want}
	q.Labels = withLabels(q.Labels, m.Labels())
	if _, err := api.Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update quota %s: %w", QuotaName, err)
	}
	r.changed("quota %s updated: %s → %s=%d", QuotaName, before, JobCount, m.Capacity)
	return nil
}

func limitRangeSpec(mem resource.Quantity) corev1.LimitRangeSpec {
	l := corev1.ResourceList{corev1.ResourceMemory: mem}
	return corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type:           corev1.LimitTypeContainer,
		Default:        l,
		DefaultRequest: l,
		Max:            l,
	}}}
}

func ensureLimitRange(ctx context.Context, cs kubernetes.Interface, m Member, r *Result) error {
	api := cs.CoreV1().LimitRanges(m.Namespace)
	mem, want := m.PodMemory()
	lr, err := api.Get(ctx, LimitRangeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && !want:
		return nil
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, &corev1.LimitRange{
			ObjectMeta: metav1.ObjectMeta{Name: LimitRangeName, Namespace: m.Namespace, Labels: m.Labels()},
			Spec:       limitRangeSpec(mem),
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create limit range %s: %w", LimitRangeName, err)
		}
		r.changed("limit range %s created: pod memory %s", LimitRangeName, mem.String())
		return nil
	case err != nil:
		return fmt.Errorf("limit range %s: %w", LimitRangeName, err)
	case !want:
		if !ours(lr.Labels, m.Pool) {
			return nil
		}
		if err := api.Delete(ctx, LimitRangeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete limit range %s: %w", LimitRangeName, err)
		}
		r.changed("limit range %s deleted: the pool sets no pod memory", LimitRangeName)
		return nil
	}
	if limitMemory(lr) == mem.String() && len(lr.Spec.Limits) == 1 && hasLabels(lr.Labels, m.Labels()) {
		return nil
	}
	before := limitMemory(lr)
	lr.Spec = limitRangeSpec(mem)
	lr.Labels = withLabels(lr.Labels, m.Labels())
	if _, err := api.Update(ctx, lr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update limit range %s: %w", LimitRangeName, err)
	}
	r.changed("limit range %s updated: pod memory %s → %s", LimitRangeName, orNone(before), mem.String())
	return nil
}

// limitMemory is the container memory limit a LimitRange poolc wrote
// gives, or "" when it gives none or its parts disagree.
func limitMemory(lr *corev1.LimitRange) string {
	for _, it := range lr.Spec.Limits {
		if it.Type != corev1.LimitTypeContainer {
			continue
		}
		d, x, q := it.Default[corev1.ResourceMemory], it.Max[corev1.ResourceMemory], it.DefaultRequest[corev1.ResourceMemory]
		if d.Cmp(x) == 0 && d.Cmp(q) == 0 && !d.IsZero() {
			return d.String()
		}
	}
	return ""
}

func ensureRegistry(ctx context.Context, cs kubernetes.Interface, m Member, r *Result) error {
	api := cs.CoreV1().ConfigMaps(RegistryNamespace)
	cm, err := api.Get(ctx, RegistryConfigMap, metav1.GetOptions{})
	notFound := apierrors.IsNotFound(err)
	if err != nil && !notFound {
		return fmt.Errorf("configmap %s/%s: %w", RegistryNamespace, RegistryConfigMap, err)
	}
	if m.Registry == "" {
		if notFound || !ours(cm.Labels, m.Pool) {
			return nil
		}
		if err := api.Delete(ctx, RegistryConfigMap, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete configmap %s/%s: %w", RegistryNamespace, RegistryConfigMap, err)
		}
		r.changed("configmap %s/%s deleted: the member has no registry", RegistryNamespace, RegistryConfigMap)
		return nil
	}
	doc := hostingFor(m.Registry).Render()
	if notFound {
		_, err = api.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: RegistryConfigMap, Namespace: RegistryNamespace, Labels: m.Labels()},
			Data:       map[string]string{RegistryKey: doc},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create configmap %s/%s: %w", RegistryNamespace, RegistryConfigMap, err)
		}
		r.changed("configmap %s/%s created: registry %s", RegistryNamespace, RegistryConfigMap, m.Registry)
		return nil
	}
	if !ours(cm.Labels, m.Pool) {
		// k3d or kind wrote it, or another pool: the cluster's registry is
		// theirs to publish.
		if h, err := ParseRegistryHosting([]byte(cm.Data[RegistryKey])); err != nil || h.Registry() != m.Registry {
			r.warn("configmap %s/%s was not made by pod pool %s and names registry %q, not %s; poolc leaves it",
				RegistryNamespace, RegistryConfigMap, m.Pool, h.Registry(), m.Registry)
		}
		return nil
	}
	if cm.Data[RegistryKey] == doc && len(cm.Data) == 1 {
		return nil
	}
	before := ""
	if h, err := ParseRegistryHosting([]byte(cm.Data[RegistryKey])); err == nil {
		before = h.Registry()
	}
	cm.Data = map[string]string{RegistryKey: doc}
	if _, err := api.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update configmap %s/%s: %w", RegistryNamespace, RegistryConfigMap, err)
	}
	r.changed("configmap %s/%s updated: registry %s → %s", RegistryNamespace, RegistryConfigMap, orNone(before), m.Registry)
	return nil
}

func sameResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func describeHard(l corev1.ResourceList) string {
	if len(l) == 0 {
		return "no limits"
	}
	if len(l) == 1 {
		for k, v := range l {
			return fmt.Sprintf("%s=%s", k, v.String())
		}
	}
	return fmt.Sprintf("%d limits", len(l))
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func withLabels(have, want map[string]string) map[string]string {
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, want)
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
