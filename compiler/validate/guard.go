package validate

import (
	"fmt"
	"strings"

	"poolc.dev/poolc/pools"
)

// guards reports each guard whose reserve_gb takes all of a node's
// memory, once, at the guard's own reserve_gb: the pool's for the nodes
// that take the pool's reserve, a node's own for a node that sets its
// own. The capacity rules then leave those nodes out of their findings,
// since no lane could fit there whatever its size.
func (v *validator) guards() {
	v.reservedOut = map[string]bool{}
	var shared []string
	for _, n := range v.p.Nodes {
		if n.GPUWorkingSetGB > n.MemoryGB {
			v.errorf("working-set-too-large", pools.Path{"node", n.Name, "gpu_working_set_gb"},
				"node %q: gpu_working_set_gb %s is more than its memory_gb %s", n.Name, pools.GB(n.GPUWorkingSetGB), pools.GB(n.MemoryGB))
		}
		if n.Guard.ReserveGB < n.MemoryGB {
			continue
		}
		v.reservedOut[n.Name] = true
		if n.Guard.ReserveGB == v.p.Guard.ReserveGB {
			shared = append(shared, fmt.Sprintf("%s (%s)", n.Name, pools.GB(n.MemoryGB)))
			continue
		}
		v.errorf("reserve-too-large", pools.Path{"node", n.Name, "guard", "reserve_gb"},
			"node %q: guard reserve_gb %s is all of its memory (%s) or more: no lane can load there", n.Name, pools.GB(n.Guard.ReserveGB), pools.GB(n.MemoryGB))
	}
	if len(shared) > 0 {
		v.errorf("reserve-too-large", pools.Path{"guard", "reserve_gb"},
			"guard reserve_gb %s is all the memory of %s or more: no lane can load there (set a smaller guard { reserve_gb = ... }, for the pool or the node)", pools.GB(v.p.Guard.ReserveGB), strings.Join(shared, ", "))
	}
}
