package llama

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// record is one pidfile of a node's state directory as the status script
// reports it.
type record struct {
	name  string
	pid   int
	alive bool
	meta  laneMeta
	argv  []string // the live process's own command line
	rss   int64    // its resident memory, in bytes
}

// isLane reports whether the record's live process is lane l's server:
// its own command line runs l's model (or, for the router, its preset) on
// l's port. A reused pid fails this.
func (r record) isLane(l Lane) bool {
	if !r.alive {
		return false
	}
	c, err := parseCommand(r.argv)
	return err == nil && c.Port == l.Port && c.Model == l.Model
}

func (r record) describe() string {
	if !r.alive {
		return fmt.Sprintf("pid %d is gone", r.pid)
	}
	return fmt.Sprintf("pid %d runs %q", r.pid, strings.Join(r.argv, " "))
}

// nodeStatus is what the status script reports of a node.
type nodeStatus struct {
	records  map[string]record
	order    []string
	memTotal int64 // bytes, 0 when unknown
	memFree  int64
}

// lane is the record of lane l's process: by its key, else (files an
// older poolc wrote, named by the lane alone) by the name and port its
// metadata holds.
func (st nodeStatus) lane(l Lane) (record, bool) {
	if r, ok := st.records[l.key()]; ok {
		return r, true
	}
	for _, name := range st.order {
		if r := st.records[name]; r.meta.Name == l.Name && r.meta.Port == l.Port && name != RouterLane {
			return r, true
		}
	}
	return record{}, false
}

// parseStatus reads the output of scriptStatus.
func parseStatus(out string) (nodeStatus, error) {
	st := nodeStatus{records: map[string]record{}}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		f := strings.SplitN(sc.Text(), "\t", 7)
		switch {
		case f[0] == "lane" && len(f) == 7:
			r := record{name: f[1], alive: f[3] == "1"}
			var err error
			if r.pid, err = strconv.Atoi(f[2]); err != nil || r.pid < 0 {
				return st, fmt.Errorf("status line %d: pid %q", n, f[2])
			}
			kib, err := strconv.ParseInt(f[4], 10, 64)
			if err != nil || kib < 0 {
				return st, fmt.Errorf("status line %d: resident memory %q", n, f[4])
			}
			r.rss = kib << 10
			if f[5] != "" {
				if err := json.Unmarshal([]byte(f[5]), &r.meta); err != nil {
					return st, fmt.Errorf("status line %d: lane %s metadata: %v", n, r.name, err)
				}
			}
			if r.argv, err = decodeArgv(f[6]); err != nil {
				return st, fmt.Errorf("status line %d: lane %s: %v", n, r.name, err)
			}
			if _, dup := st.records[r.name]; !dup {
				st.order = append(st.order, r.name)
			}
			st.records[r.name] = r
		case f[0] == "mem" && len(f) == 3:
			kb, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil || kb < 0 {
				return st, fmt.Errorf("status line %d: memory %q", n, f[2])
			}
			switch f[1] {
			case "MemTotal:":
				st.memTotal = kb << 10
			case "MemAvailable:":
				st.memFree = kb << 10
			}
		default:
			return st, fmt.Errorf("status line %d: unexpected %q", n, sc.Text())
		}
	}
	return st, sc.Err()
}
