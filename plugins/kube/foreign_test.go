package kube

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
)

// objectMeta is an object's metadata as the metadata client lists it.
func objectMeta(apiVersion, kind, ns, name string, labels map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

// A namespace poolc made that holds a user's ConfigMap is kept when the
// member is removed: poolc deletes its own objects there, takes its
// labels off the namespace and says why, and the plan's notice
// (PlanRemove) says the same beforehand. The objects the cluster makes
// by itself and poolc's own do not count. With delete_foreign_on_remove
// the namespace goes, and the notice names what goes with it.
func TestRemoveKeepsANamespaceHoldingAUsersObject(t *testing.T) {
	ctx := context.Background()
	k, cs := withFake()
	m := member()
	if _, err := k.Ensure(ctx, m); err != nil {
		t.Fatal(err)
	}
	cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"list"}},
		{Name: "serviceaccounts", Namespaced: true, Kind: "ServiceAccount", Verbs: []string{"list"}},
		{Name: "resourcequotas", Namespaced: true, Kind: "ResourceQuota", Verbs: []string{"list"}},
		{Name: "events", Namespaced: true, Kind: "Event", Verbs: []string{"list"}},
	}}}
	scheme := metadatafake.NewTestScheme()
	metav1.AddMetaToScheme(scheme)
	objs := []runtime.Object{
		objectMeta("v1", "ConfigMap", m.Namespace, "user-data", nil),
		objectMeta("v1", "ConfigMap", m.Namespace, "kube-root-ca.crt", nil),
		objectMeta("v1", "ServiceAccount", m.Namespace, "default", nil),
		objectMeta("v1", "ResourceQuota", m.Namespace, QuotaName, m.Labels()),
		objectMeta("v1", "Event", m.Namespace, "x.123", nil),
	}
	k.mds["fake"] = metadatafake.NewSimpleMetadataClient(scheme, objs...)

	rm, err := k.PlanRemove(ctx, m, RemoveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rm.String(); got != "deletes quota poolc-jobs, limit range poolc-pod-memory, configmap kube-public/local-registry-hosting; keeps namespace jobs: poolc made it, but it holds 1 object poolc did not make (configmaps/user-data); set delete_foreign_on_remove = true in the kube plugin's config to delete it with them" {
		t.Errorf("plan of the removal: %s", got)
	}
	r, err := k.Remove(ctx, m, RemoveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, m.Namespace, metav1.GetOptions{})
	if err != nil || ours(ns.Labels, m.Pool) {
		t.Fatalf("namespace after the removal: %v %v, want it kept without poolc's labels", ns.GetLabels(), err)
	}
	if _, err := cs.CoreV1().ResourceQuotas(m.Namespace).Get(ctx, QuotaName, metav1.GetOptions{}); err == nil {
		t.Error("poolc's quota is still there")
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "namespace jobs kept") {
		t.Errorf("warnings %q", r.Warnings)
	}

	k2, _ := withFake()
	if _, err := k2.Ensure(ctx, m); err != nil {
		t.Fatal(err)
	}
	k2.clients["fake"].Discovery().(*fakediscovery.FakeDiscovery).Resources = cs.Discovery().(*fakediscovery.FakeDiscovery).Resources
	k2.mds["fake"] = metadatafake.NewSimpleMetadataClient(scheme, objs...)
	rm, err = k2.PlanRemove(ctx, m, RemoveOptions{DeleteForeign: true})
	if err != nil || !strings.HasSuffix(rm.String(), "namespace jobs with 1 object poolc did not make (configmaps/user-data)") {
		t.Errorf("plan of the removal with delete_foreign_on_remove: %s %v", rm, err)
	}
}
