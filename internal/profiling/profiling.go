// Package profiling lets a user profile any poolc command for a bug report:
// POOLC_CPUPROFILE=FILE writes a CPU profile of the whole command and
// POOLC_MEMPROFILE=FILE a heap profile taken as it ends, both readable with
// `go tool pprof`. Environment variables rather than flags, so that every
// command, its help and its golden output stay as they are.
package profiling

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// CPUEnv and MemEnv name the environment variables that ask for a profile.
const (
	// CPUEnv is the environment variable naming the file a CPU profile
	// of the whole command is written to.
	CPUEnv = "POOLC_CPUPROFILE"
	// MemEnv is the environment variable naming the file a heap profile
	// is written to when the command ends.
	MemEnv = "POOLC_MEMPROFILE"
)

// Start begins the profiles the environment asks for and returns the
// function that ends them, which never fails the command: a profile that
// cannot be written is reported on warn. It removes both variables from
// the environment, so the plugin processes poolc starts (itself again)
// do not write over the same files.
func Start(warn func(error)) (stop func()) {
	cpuPath, memPath := os.Getenv(CPUEnv), os.Getenv(MemEnv)
	os.Unsetenv(CPUEnv)
	os.Unsetenv(MemEnv)
	var cpu *os.File
	if cpuPath != "" {
		f, err := os.Create(cpuPath)
		if err == nil {
			err = pprof.StartCPUProfile(f)
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			warn(fmt.Errorf("%s: %w", CPUEnv, err))
		} else {
			cpu = f
		}
	}
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				warn(fmt.Errorf("%s: %w", CPUEnv, err))
			}
		}
		if memPath != "" {
			if err := writeHeap(memPath); err != nil {
				warn(fmt.Errorf("%s: %w", MemEnv, err))
			}
		}
	}
}

// writeHeap writes a heap profile of what is live after a collection.
func writeHeap(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
