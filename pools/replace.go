package pools

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"path"
	"slices"
	"strings"
)

// SparePorts gives each lane placed in the fleet the port its second
// process listens on while the lane is replaced on its node (new weights,
// args or port under the same lane name, started before the old process
// stops). Spare ports belong to a node: on each node, the lanes placed
// there take them in the order of their ports (then names), each the
// lowest port above its own that no lane placed on the node declares, no
// registry of a pod-pool member listens on, is not the llama nodes'
// router port (RouterPort) and no lane of the node before it took. Two
// lanes of one node never share a spare port; lanes of two nodes may.
// The result depends on the pool and the placement alone (each lane's
// declared port, the node placed holds it on). A lane whose port has no
// free port above it on its node gets none (0), as does a lane the fleet
// does not place.
func (p *Pool) SparePorts(placed *Fleet) map[string]int {
	everywhere := []int{}
	if rp := p.RouterPort(); rp > 0 {
		everywhere = append(everywhere, rp)
	}
	for _, pp := range p.PodPools {
		for _, m := range pp.Members {
			everywhere = append(everywhere, m.Registry.Port)
		}
	}
	slices.Sort(everywhere)
	nodeOf := make(map[string]string, len(placed.Lanes))
	for _, l := range placed.Lanes {
		nodeOf[l.Name] = l.Node
	}
	onNode := map[string][]Lane{}
	for _, l := range p.Lanes {
		if node, ok := nodeOf[l.Name]; ok {
			onNode[node] = append(onNode[node], l)
		}
	}
	out := make(map[string]int, len(nodeOf))
	for _, lanes := range onNode {
		spareOnNode(lanes, everywhere, out)
	}
	return out
}

// spareOnNode gives the lanes of one node their spare ports (see
// SparePorts), everywhere being the sorted ports taken on every node.
// Lanes come in port order and each takes the lowest free port above its
// own, so every port between a lane's port and the spare it took is
// taken: the next lane's search starts past both, and the taken ports
// are walked once, in order, which keeps the cost linear in the node's
// lanes plus the ports taken everywhere.
func spareOnNode(lanes []Lane, everywhere []int, out map[string]int) {
	slices.SortFunc(lanes, func(a, b Lane) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), strings.Compare(a.Name, b.Name))
	})
	next, li, ei := 0, 0, 0
	if len(lanes) > 0 {
		ei, _ = slices.BinarySearch(everywhere, lanes[0].Port)
	}
	taken := func(q int) bool {
		for li < len(lanes) && lanes[li].Port < q {
			li++
		}
		for ei < len(everywhere) && everywhere[ei] < q {
			ei++
		}
		return li < len(lanes) && lanes[li].Port == q || ei < len(everywhere) && everywhere[ei] == q
	}
	for _, l := range lanes {
		q := max(l.Port+1, next)
		for q <= 65535 && taken(q) {
			q++
		}
		if q > 65535 {
			return
		}
		out[l.Name] = q
		next = q + 1
	}
}

// SameWeights reports whether two lane processes load the same weights,
// as far as the state knows: the same SHA256 when both record one, else
// the same source when both record one. What is not recorded does not
// count as a change (a state written before poolc recorded digests).
func SameWeights(a, b LaneState) bool {
	switch {
	case a.SHA256 != "" && b.SHA256 != "":
		return a.SHA256 == b.SHA256
	case a.Source != "" && b.Source != "":
		return a.Source == b.Source
	}
	return true
}

// StagedPath is where new weights for l go while a running process still
// loads l.Path with other content: beside it, named by their digest
// (their source's when the model declares none), so a file a process has
// mapped is never overwritten. /models/q.gguf with sha256 0123456789ab...
// stages at /models/q.sha-0123456789ab.gguf. It is l.Path when l
// records neither digest nor source.
func StagedPath(l LaneState) string {
	var tag string
	switch {
	case len(l.SHA256) >= 12:
		tag = "sha-" + strings.ToLower(ShortDigest(l.SHA256))
	case l.Source != "":
		sum := sha256.Sum256([]byte(l.Source))
		tag = "src-" + hex.EncodeToString(sum[:6])
	default:
		return l.Path
	}
	dir, file := path.Split(l.Path)
	ext := path.Ext(file)
	return dir + strings.TrimSuffix(file, ext) + "." + tag + ext
}

// ShortDigest is a digest as people compare it: its first 12 characters.
func ShortDigest(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
