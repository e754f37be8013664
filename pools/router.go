package pools

// LlamaRuntime is the runtime plugin whose nodes serve their on-demand
// lanes from a router: one llama-server per node, in router mode, on the
// router port.
const LlamaRuntime = "llama"

// DefaultRouterPort is the port of every llama node's router when the
// llama plugin's config sets no router_port (the haproxy plugin's
// router_port has the same default).
const DefaultRouterPort = 8180

// RouterPort is the port the routers of the pool's llama nodes listen on:
// the llama plugin block's config router_port, else DefaultRouterPort;
// 0 when no node's runtime is llama. No lane that runs on such a node may
// listen there, nor a lane's second process.
func (p *Pool) RouterPort() int {
	uses := false
	for _, n := range p.Nodes {
		uses = uses || n.Runtime == LlamaRuntime
	}
	if !uses {
		return 0
	}
	for _, pl := range p.Plugins {
		if pl.Name != LlamaRuntime {
			continue
		}
		switch v := pl.Config["router_port"].(type) {
		case float64:
			if v > 0 {
				return int(v)
			}
		case int:
			if v > 0 {
				return v
			}
		case int64:
			if v > 0 {
				return int(v)
			}
		}
	}
	return DefaultRouterPort
}
