package controller

import "poolc.dev/poolc/pools"

// Warm decides which lanes demand holds warm: lanes the configuration in
// force (lanes, as its profile has them) runs on demand, which the
// controller runs as preferred instead — loaded ahead of requests and
// evicted only after the on-demand lanes — while they are busy.
//
// A lane is held once its rate (requests per minute over the demand
// window, from rates) reaches PromotePerMinute, and let go once it falls
// below DemotePerMinute; between the two a lane stays as it is (held
// says which lanes are held now). The band, and the slower hysteresis
// the residency-only plans this makes get from Decide, keep demand that
// flaps from changing residencies with it. The result is in lane order.
func Warm(lanes []pools.Lane, rates map[string]float64, held map[string]bool, s Settings) []string {
	var out []string
	for _, l := range lanes {
		if l.Residency != pools.OnDemand {
			continue
		}
		r := rates[l.Name]
		if r >= s.PromotePerMinute || (held[l.Name] && r >= s.DemotePerMinute) {
			out = append(out, l.Name)
		}
	}
	return out
}
