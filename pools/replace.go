package pools

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"sort"
	"strings"
)

// SparePorts gives each lane the port its second process listens on
// while the lane is replaced on its node (new weights, args or port under
// the same lane name, started before the old process stops). Lanes take
// them in the order of their ports (then names), each the lowest port
// above its own that no lane declares, no registry of a pod-pool member
// listens on, is not the llama nodes' router port (RouterPort) and no
// lane before it took, so the result depends on the
// pool alone and two lanes never share a spare port. A lane whose port
// has no free port above it gets none (0).
func (p *Pool) SparePorts() map[string]int {
	var taken [65536]bool
	take := func(port int) {
		if port >= 0 && port < len(taken) {
			taken[port] = true
		}
	}
	take(p.RouterPort())
	for _, l := range p.Lanes {
		take(l.Port)
	}
	for _, pp := range p.PodPools {
		for _, m := range pp.Members {
			take(m.Registry.Port)
		}
	}
	lanes := append([]Lane(nil), p.Lanes...)
	sort.Slice(lanes, func(i, j int) bool {
		if lanes[i].Port != lanes[j].Port {
			return lanes[i].Port < lanes[j].Port
		}
		return lanes[i].Name < lanes[j].Name
	})
	out := make(map[string]int, len(lanes))
	// Lanes come in port order and each takes the lowest free port above
	// its own, so every port between a lane's port and the spare it took
	// is taken: the next lane's search starts past both, which keeps the
	// whole walk linear in lanes plus ports.
	next := 0
	for _, l := range lanes {
		for q := max(l.Port+1, next); q <= 65535; q++ {
			if !taken[q] {
				taken[q] = true
				out[l.Name] = q
				next = q + 1
				break
			}
		}
	}
	return out
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
