package pools

import "testing"

func TestRouterPortIsTheLlamaPluginsOnlyWhenANodeRunsLlama(t *testing.T) {
	p := &Pool{Nodes: []Node{{Name: "a"}}}
	if got := p.RouterPort(); got != 0 {
		t.Errorf("no llama node: %d", got)
	}
	p.Nodes = append(p.Nodes, Node{Name: "b", Runtime: LlamaRuntime})
	if got := p.RouterPort(); got != DefaultRouterPort {
		t.Errorf("llama without router_port: %d", got)
	}
	for _, v := range []any{float64(9100), 9100, int64(9100)} {
		p.Plugins = []Plugin{{Name: "haproxy", Config: map[string]any{"router_port": 1}}, {Name: LlamaRuntime, Config: map[string]any{"router_port": v}}}
		if got := p.RouterPort(); got != 9100 {
			t.Errorf("router_port %T(%v): %d", v, v, got)
		}
	}
}

func TestSparePortsSkipTheRouterPort(t *testing.T) {
	p := &Pool{Nodes: []Node{{Name: "a", Runtime: LlamaRuntime}}, Lanes: []Lane{{Name: "x", Port: DefaultRouterPort - 1}, {Name: "y", Port: DefaultRouterPort + 1}}}
	placed := &Fleet{Lanes: []LaneState{{Name: "x", Node: "a"}, {Name: "y", Node: "a"}}}
	spare := p.SparePorts(placed)
	if spare["x"] != DefaultRouterPort+2 || spare["y"] != DefaultRouterPort+3 {
		t.Errorf("spare ports %v: want x past the router port and y's", spare)
	}
	p.Nodes[0].Runtime = ""
	if spare := p.SparePorts(placed); spare["x"] != DefaultRouterPort {
		t.Errorf("without llama nodes the router port is free: %v", spare)
	}
}
