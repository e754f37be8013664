package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
)

// maxForeign bounds the foreign objects a removal names (and the objects
// of one kind it reads).
const maxForeign = 50

// selfMade are the objects the cluster makes in every namespace by
// itself, RESOURCE/NAME: they go with the namespace whoever made it.
var selfMade = map[string]bool{
	"serviceaccounts/default":     true,
	"configmaps/kube-root-ca.crt": true,
}

// derived are the resources whose objects controllers make for others
// (an event for any object, endpoints for a Service), so an object of
// them is never the operator's own.
var derived = map[string]bool{"events": true, "endpoints": true, "endpointslices": true}

// foreignObjects lists, sorted, the objects in namespace ns that neither
// poolc made for pool nor the cluster made by itself, as RESOURCE/NAME
// (RESOURCE.GROUP outside the core group), at most maxForeign: it reads
// every namespaced resource the API server lists (discovery), by
// metadata only. An object another object owns (a Job's pod) is its
// owner's: the owner is listed when it is foreign. An error means the
// namespace's contents are unknown.
func foreignObjects(ctx context.Context, disc discovery.DiscoveryInterface, md metadata.Interface, ns, pool string) ([]string, error) {
	lists, err := discovery.ServerPreferredNamespacedResources(disc)
	if err != nil {
		return nil, fmt.Errorf("the kinds of object namespace %s may hold: %w", ns, err)
	}
	var out []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || derived[r.Name] || !hasVerb(r.Verbs, "list") {
				continue
			}
			objs, err := md.Resource(gv.WithResource(r.Name)).Namespace(ns).List(ctx, metav1.ListOptions{Limit: maxForeign})
			if err != nil {
				return nil, fmt.Errorf("list %s in %s: %w", r.Name, ns, err)
			}
			kind := r.Name
			if gv.Group != "" {
				kind += "." + gv.Group
			}
			for _, o := range objs.Items {
				switch {
				case ours(o.Labels, pool), len(o.OwnerReferences) > 0, selfMade[kind+"/"+o.Name],
					o.Annotations["kubernetes.io/service-account.name"] != "": // a token the cluster made
					continue
				}
				out = append(out, kind+"/"+o.Name)
			}
		}
	}
	sort.Strings(out)
	if len(out) > maxForeign {
		out = out[:maxForeign]
	}
	return out, nil
}

func hasVerb(verbs metav1.Verbs, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}
