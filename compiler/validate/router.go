package validate

import (
	"slices"

	"poolc.dev/poolc/pools"
)

// routerPort checks that no lane that may run on a node whose runtime is
// llama has the port that node's router listens on for its on-demand
// lanes (the llama plugin's router_port).
func (v *validator) routerPort() {
	p := v.p
	port := p.RouterPort()
	if port == 0 {
		return
	}
	reported := map[string]bool{}
	for _, profile := range v.profileNames() {
		for _, l := range v.view(profile).Lanes {
			if l.Port != port || reported[l.Name] {
				continue
			}
			i := slices.IndexFunc(p.Candidates(l), func(name string) bool {
				n := p.Node(name)
				return n != nil && n.Runtime == pools.LlamaRuntime
			})
			if i < 0 {
				continue
			}
			reported[l.Name] = true
			v.errorf("router-port", pools.Path{"lane", l.Name, "port"},
				"lane %q: port %d is where the router of node %q listens for its on-demand lanes (the llama plugin's router_port, %d unless set): give the lane another port, or set router_port in the llama and haproxy plugin blocks to a port no lane uses",
				l.Name, port, p.Candidates(l)[i], pools.DefaultRouterPort)
		}
	}
}
