package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc/PID/stat (USER_HZ,
// 100 on Linux).
const clockTick = 10 * time.Millisecond

// treeCPU returns the CPU time (user and system) this process and its
// children (the plugins it started) have used so far, from /proc, or
// false where there is no /proc. A benchmark reports it per step, which
// the load of a shared machine moves far less than the wall time.
func treeCPU() (time.Duration, bool) {
	self, ok := procCPU("self")
	if !ok {
		return 0, false
	}
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, pid := range strings.Fields(string(data)) {
			if c, ok := procCPU(pid); ok {
				self += c
			}
		}
	}
	return self, true
}

// procCPU is the user and system time of process pid ("self" or a
// number), from /proc/PID/stat.
func procCPU(pid string) (time.Duration, bool) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: the fields
	// counted from the state (field 3) follow its last ')'.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * clockTick, true
}
