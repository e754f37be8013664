package kube

import "poolc.dev/poolc/pools"

// Members are the pod pool's members as Ensure sets them up, in the
// pool's priority order.
func Members(pp pools.PodPool) []Member {
	out := make([]Member, 0, len(pp.Members))
	for _, m := range pp.Members {
		out = append(out, Member{
			Pool:        pp.Name,
			Context:     m.Context,
			Namespace:   pp.Namespace,
			Capacity:    m.Capacity,
			Registry:    m.Registry.String(),
			PodMemoryGB: pp.PodMemoryGB,
		})
	}
	return out
}
