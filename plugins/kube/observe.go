package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Observed is what a member's cluster holds of what Ensure sets up.
type Observed struct {
	Context   string `json:"context"`
	Namespace string `json:"namespace"`
	// NamespaceExists and NamespaceOurs say whether the namespace is there
	// and whether poolc made it for the pool.
	NamespaceExists bool `json:"namespace_exists"`
	NamespaceOurs   bool `json:"namespace_ours"`
	// Quota is the Job quota, nil when there is none.
	Quota *Quota `json:"quota,omitempty"`
	// PodMemory is the LimitRange's container memory limit ("4G"), "" when
	// there is none or it is not one limit.
	PodMemory string `json:"pod_memory,omitempty"`
	// Registry is the NAME:PORT kube-public/local-registry-hosting names,
	// "" when there is none; RegistryOurs says poolc wrote it for the pool.
	Registry     string `json:"registry,omitempty"`
	RegistryOurs bool   `json:"registry_ours,omitempty"`
}

// Quota is the count/jobs.batch limit of a member's quota and its use as
// the quota controller last counted it. Counted is false until the
// controller has counted (a quota the controller has not seen refuses
// every Job).
type Quota struct {
	Hard    int64 `json:"hard"`
	Used    int64 `json:"used"`
	Counted bool  `json:"counted"`
	// Extra is true when the quota limits more than Jobs (edited by hand).
	Extra bool `json:"extra,omitempty"`
}

// Observe reads the member's namespace, quota, limit range and registry
// ConfigMap. Nothing missing is an error; an unreachable cluster is.
func (k *Kubeconfig) Observe(ctx context.Context, m Member) (Observed, error) {
	o := Observed{Context: m.Context, Namespace: m.Namespace}
	cs, err := k.Client(ctx, m.Context)
	if err != nil {
		return o, err
	}
	core := cs.CoreV1()
	ns, err := core.Namespaces().Get(ctx, m.Namespace, metav1.GetOptions{})
	switch {
	case err == nil:
		o.NamespaceExists, o.NamespaceOurs = true, ours(ns.Labels, m.Pool)
	case !apierrors.IsNotFound(err):
		return o, fmt.Errorf("member %s: namespace %s: %w", m.Context, m.Namespace, err)
	}
	if o.NamespaceExists {
		q, err := core.ResourceQuotas(m.Namespace).Get(ctx, QuotaName, metav1.GetOptions{})
		switch {
		case err == nil:
			hard := q.Spec.Hard[JobCount]
			used, counted := q.Status.Used[JobCount]
			o.Quota = &Quota{Hard: hard.Value(), Used: used.Value(), Counted: counted, Extra: len(q.Spec.Hard) != 1 || len(q.Spec.Scopes) > 0}
		case !apierrors.IsNotFound(err):
			return o, fmt.Errorf("member %s: quota %s: %w", m.Context, QuotaName, err)
		}
		lr, err := core.LimitRanges(m.Namespace).Get(ctx, LimitRangeName, metav1.GetOptions{})
		switch {
		case err == nil && len(lr.Spec.Limits) == 1:
			o.PodMemory = limitMemory(lr)
		case err == nil:
			// Edited by hand beyond the one limit Ensure writes: what it
			// gives pods is not the pool's, and Ensure rewrites it.
		case !apierrors.IsNotFound(err):
			return o, fmt.Errorf("member %s: limit range %s: %w", m.Context, LimitRangeName, err)
		}
	}
	cm, err := core.ConfigMaps(RegistryNamespace).Get(ctx, RegistryConfigMap, metav1.GetOptions{})
	switch {
	case err == nil:
		o.RegistryOurs = ours(cm.Labels, m.Pool)
		if h, err := ParseRegistryHosting([]byte(cm.Data[RegistryKey])); err == nil {
			o.Registry = h.Registry()
		}
	case !apierrors.IsNotFound(err):
		return o, fmt.Errorf("member %s: configmap %s/%s: %w", m.Context, RegistryNamespace, RegistryConfigMap, err)
	}
	return o, nil
}

// Drift lists how the observed member differs from m, one line each, in
// the words a plan shows; it is empty when Ensure would change nothing.
func (o Observed) Drift(m Member) []string {
	var out []string
	if !o.NamespaceExists {
		return []string{"namespace " + m.Namespace + " is missing"}
	}
	switch {
	case o.Quota == nil:
		out = append(out, "quota "+QuotaName+" is missing")
	case o.Quota.Hard != int64(m.Capacity) || o.Quota.Extra:
		out = append(out, fmt.Sprintf("quota %s allows %d Jobs, the pool says %d", QuotaName, o.Quota.Hard, m.Capacity))
	}
	want := ""
	if q, ok := m.PodMemory(); ok {
		want = q.String()
	}
	if o.PodMemory != want {
		out = append(out, fmt.Sprintf("pod memory limit %s, the pool says %s", orNone(o.PodMemory), orNone(want)))
	}
	// A ConfigMap someone else wrote (k3d, kind) is theirs: Ensure leaves
	// it, so a different registry there is a warning of Ensure, not drift.
	if m.Registry != "" && o.Registry != m.Registry && (o.RegistryOurs || o.Registry == "") || m.Registry == "" && o.RegistryOurs {
		out = append(out, fmt.Sprintf("registry %s, the pool says %s", orNone(o.Registry), orNone(m.Registry)))
	}
	return out
}
