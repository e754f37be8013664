package validate

import (
	"fmt"
	"sort"
	"strings"

	"poolc.dev/poolc/pools"
)

// podPools checks that each cluster context is a member of one pod pool
// only, once.
func (v *validator) podPools() {
	where := map[string]string{}
	for _, pp := range v.p.PodPools {
		for i, m := range pp.Members {
			path := pools.MemberPath(pp.Name, i)
			if other, ok := where[m.Context]; ok {
				if other == pp.Name {
					v.errorf("duplicate-member", path, "pod_pool %q: context %q is listed twice", pp.Name, m.Context)
				} else {
					v.errorf("duplicate-member", path, "pod_pool %q: context %q is already a member of pod_pool %q", pp.Name, m.Context, other)
				}
				continue
			}
			where[m.Context] = pp.Name
		}
	}
}

// listener is something that listens on a port of a host.
type listener struct {
	what string // as shown in messages
	key  string // registries of the same name share one listener
	path pools.Path
}

// ports checks that no two lanes that can run on one node share a port,
// and that no two registries, or a registry and a lane, share a port of
// one SSH host.
func (v *validator) ports() {
	p := v.p
	onNode := map[nodePort][]string{} // lanes that may run on a node with a port
	for _, profile := range v.profileNames() {
		if pr := p.Profile(profile); pr != nil && len(pr.Lanes) == 0 {
			continue // its lanes are the lanes as declared, counted under ""
		}
		for _, l := range v.view(profile).Lanes {
			for _, n := range p.CandidatesIn(v.nodes, l) {
				at := nodePort{n, l.Port}
				if !contains(onNode[at], l.Name) {
					onNode[at] = append(onNode[at], l.Name)
				}
			}
		}
	}
	var shared []nodePort // held by two lanes or more, by node then port
	for at, lanes := range onNode {
		if len(lanes) > 1 {
			shared = append(shared, at)
		}
	}
	sort.Slice(shared, func(i, j int) bool {
		if shared[i].node != shared[j].node {
			return shared[i].node < shared[j].node
		}
		return shared[i].port < shared[j].port
	})
	reported := map[string]bool{}
	for _, at := range shared {
		lanes := append([]string(nil), onNode[at]...)
		sort.Strings(lanes)
		for _, l := range lanes[1:] {
			pair := lanes[0] + "\x00" + l
			if reported[pair] {
				continue
			}
			reported[pair] = true
			v.errorf("port-clash", pools.Path{"lane", l, "port"}, "lane %q: port %d is also the port of lane %q, and both may run on node %q", l, at.port, lanes[0], at.node)
		}
	}

	hosts := map[string]map[int][]listener{}
	add := func(host string, port int, l listener) {
		if hosts[host] == nil {
			hosts[host] = map[int][]listener{}
		}
		for _, have := range hosts[host][port] {
			if have.key == l.key {
				return
			}
		}
		hosts[host][port] = append(hosts[host][port], l)
	}
	for _, pp := range p.PodPools {
		for i, m := range pp.Members {
			if m.Registry.IsZero() {
				continue
			}
			add(v.hostOf(m.SSHHost), m.Registry.Port, listener{
				what: fmt.Sprintf("registry %s (pod_pool %q member %q)", m.Registry.Name, pp.Name, m.Context),
				key:  "registry " + m.Registry.Name,
				path: pools.MemberPath(pp.Name, i),
			})
		}
	}
	for _, n := range p.Nodes {
		host := n.Address // hostOf a node
		if len(hosts[host]) == 0 {
			continue // only registries conflict with lanes here; lane pairs are checked above
		}
		for _, port := range sortedPorts(hosts[host]) {
			for _, l := range onNode[nodePort{n.Name, port}] {
				add(host, port, listener{what: fmt.Sprintf("lane %q", l), key: "lane " + l, path: pools.Path{"lane", l, "port"}})
			}
		}
	}
	for _, host := range sortedHosts(hosts) {
		for _, port := range sortedPorts(hosts[host]) {
			ls := hosts[host][port]
			for _, l := range ls[1:] {
				if strings.HasPrefix(l.key, "lane ") && strings.HasPrefix(ls[0].key, "lane ") {
					continue
				}
				v.errorf("port-clash", l.path, "port %d of host %s is used by both %s and %s", port, hostText(host), ls[0].what, l.what)
			}
		}
	}
}

// nodePort is a port of a node.
type nodePort struct {
	node string
	port int
}

// hostOf returns the SSH host a name refers to: a node's address when the
// name is a node, else the name itself; "" is the machine running poolc.
// Hosts have one spelling (the schema's #Host), so equal hosts are equal
// strings.
func (v *validator) hostOf(name string) string {
	if n := v.p.Node(name); n != nil {
		return n.Address
	}
	return name
}

func hostText(h string) string {
	if h == "" {
		return "localhost (members without ssh_host)"
	}
	return h
}

func (v *validator) profileNames() []string {
	out := []string{""}
	for _, pr := range v.p.Profiles {
		out = append(out, pr.Name)
	}
	return out
}

func sortedPorts[T any](m map[int]T) []int {
	out := make([]int, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Ints(out)
	return out
}

func sortedHosts[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for h := range m {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
