package controller

import "poolc.dev/poolc/pools"

// Warm decides which lanes demand holds warm: lanes that the
// configuration in force (pool, its active profile applied) runs on
// demand and that the controller runs as preferred instead — loaded ahead
// of requests and evicted only after the on-demand lanes — while they are
// busy. A lane whose residency the active profile sets is left as the
// profile has it: the operator chose it for that profile.
//
// A lane is held once its rate (requests per minute over the demand
// window, from rates) reaches PromotePerMinute, and let go once it falls
// below DemotePerMinute; between the two it stays as the last decision
// (held: the lanes Warm returned last time) left it. The band, and the
// slower hysteresis the residency plans this makes get from Decide,
// keep demand that flaps from changing residencies with it. The result
// is in lane order.
func Warm(pool *pools.Pool, rates map[string]float64, held map[string]bool, s Settings) []string {
	pinned := map[string]bool{}
	if pr := pool.Profile(pool.ActiveProfile); pr != nil {
		for _, o := range pr.Lanes {
			if o.Residency != "" {
				pinned[o.Lane] = true
			}
		}
	}
	var out []string
	for _, l := range pool.Under(pool.ActiveProfile).Lanes {
		if l.Residency != pools.OnDemand || pinned[l.Name] {
			continue
		}
		r := rates[l.Name]
		if r >= s.PromotePerMinute || (held[l.Name] && r >= s.DemotePerMinute) {
			out = append(out, l.Name)
		}
	}
	return out
}
