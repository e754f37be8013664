// Package proctree reads the Linux process table in /proc: a process's
// parent and run state, the processes below a pid, a process's command
// line. Tests use it to find the processes a program under test started
// (an sshd's sessions, poolc's plugins) and to see whether they ended.
package proctree

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Proc is what /proc/PID/stat says of one process.
type Proc struct {
	// PID is the process's id.
	PID int
	// PPID is its parent's id (0 for the first process of a pid
	// namespace).
	PPID int
	// State is the one-letter run state: R running, S sleeping, Z zombie,
	// X dead, and the others of proc(5).
	State byte
}

// Ended reports whether the process has exited: a zombie counts, since
// it no longer runs whether or not its parent reaps it.
func (p Proc) Ended() bool { return p.State == 'Z' || p.State == 'X' }

// Read returns the process pid as /proc shows it now.
func Read(pid int) (Proc, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return Proc{}, err
	}
	return ParseStat(data)
}

// ParseStat reads the text of a /proc/PID/stat file: "pid (comm) state
// ppid ...". The command name comm may hold spaces and parentheses, so
// the fields after it are found from its last ")".
func ParseStat(data []byte) (Proc, error) {
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 1 || end < open {
		return Proc{}, errors.New("proc stat: no (comm) after the pid")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(data[:open])))
	if err != nil || pid <= 0 {
		return Proc{}, fmt.Errorf("proc stat: pid %q is not a positive number", bytes.TrimSpace(data[:open]))
	}
	f := bytes.Fields(data[end+1:])
	if len(f) < 2 || len(f[0]) != 1 || !isStateLetter(f[0][0]) {
		return Proc{}, errors.New("proc stat: no state letter and parent pid after (comm)")
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil || ppid < 0 {
		return Proc{}, fmt.Errorf("proc stat: parent pid %q is not a number", f[1])
	}
	return Proc{PID: pid, PPID: ppid, State: f[0][0]}, nil
}

// All lists the processes /proc shows now; a process that ends while it
// is read is left out.
func All() []Proc {
	entries, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := Read(pid); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// Children lists the processes whose parent is pid.
func Children(pid int) []int {
	var out []int
	for _, p := range All() {
		if p.PPID == pid {
			out = append(out, p.PID)
		}
	}
	return out
}

// Descendants lists the processes below pid, children before
// grandchildren, from one reading of the table.
func Descendants(pid int) []int {
	children := map[int][]int{}
	for _, p := range All() {
		children[p.PPID] = append(children[p.PPID], p.PID)
	}
	var out []int
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// Cmdline returns the arguments the process pid was started with, or
// nil when it has ended (or is a kernel thread).
func Cmdline(pid int) []string {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(data) == 0 {
		return nil
	}
	var args []string
	for _, a := range bytes.Split(bytes.TrimSuffix(data, []byte{0}), []byte{0}) {
		args = append(args, string(a))
	}
	return args
}

// isStateLetter reports whether c can be a process state in
// /proc/PID/stat: one ASCII letter (R, S, D, Z, T, t, X, I, ...).
func isStateLetter(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z'
}
