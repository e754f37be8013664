package membership

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Sampler reads a Linux node's report from a proc file system.
type Sampler struct {
	// Proc is the proc file system's root, "/proc" on a node.
	Proc string
}

// Sample reads memory from meminfo and lists the llama-server processes.
func (s Sampler) Sample() (Report, error) {
	host, _ := os.Hostname()
	rep := Report{Time: time.Now().UTC(), Host: host, LlamaServers: []Process{}}
	data, err := os.ReadFile(filepath.Join(s.Proc, "meminfo"))
	if err != nil {
		return rep, err
	}
	total, free, err := ParseMeminfo(data)
	if err != nil {
		return rep, err
	}
	rep.MemoryTotalGB, rep.MemoryFreeGB = total, free
	dirs, err := os.ReadDir(s.Proc)
	if err != nil {
		return rep, err
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || !d.IsDir() {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(s.Proc, d.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "llama-server" {
			continue // gone meanwhile, or another program
		}
		cmdline, _ := os.ReadFile(filepath.Join(s.Proc, d.Name(), "cmdline"))
		args := strings.Join(strings.FieldsFunc(string(cmdline), func(r rune) bool { return r == 0 }), " ")
		rep.LlamaServers = append(rep.LlamaServers, Process{PID: pid, Command: Clean(args)})
	}
	return rep, nil
}

// ParseMeminfo reads the total and available memory, in GB (10^9 bytes,
// as the pool file counts), from the text of /proc/meminfo. MemAvailable
// is what new processes can have without swapping; a kernel too old for
// it gives MemFree.
func ParseMeminfo(data []byte) (totalGB, freeGB float64, err error) {
	kb := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 || len(f) > 2 || (len(f) == 2 && f[1] != "kB") {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		kb[name] = float64(n)
	}
	total, ok := kb["MemTotal"]
	if !ok {
		return 0, 0, fmt.Errorf("meminfo has no MemTotal")
	}
	free, ok := kb["MemAvailable"]
	if !ok {
		free = kb["MemFree"]
	}
	return total * 1024 / 1e9, min(free, total) * 1024 / 1e9, nil
}
