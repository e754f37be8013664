//go:build linux && amd64

// Package noexec makes the calling process unable to start another
// process, for tests that require a command to start none: once Forbid
// has run, the kernel kills the whole process (SIGSYS, "bad system call")
// at its first fork, vfork, clone of a new process (a clone without
// CLONE_THREAD) or exec. Threads are still created as usual.
package noexec

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Forbid installs, on every thread of the process, a seccomp filter that
// kills the process when it starts another process. It cannot be undone,
// and is inherited by nothing, since nothing can be started.
func Forbid() error {
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
		// Offsets in struct seccomp_data: nr, arch, args[0] (its low
		// half: clone's flags are an int on x86-64).
		offNr, offArch, offArg0 = 0, 4, 16
		allow                   = unix.SECCOMP_RET_ALLOW
		kill                    = unix.SECCOMP_RET_KILL_PROCESS
	)
	forbidden := []uint32{unix.SYS_EXECVE, unix.SYS_EXECVEAT, unix.SYS_FORK, unix.SYS_VFORK, unix.SYS_CLONE3}
	// Layout: arch check, load nr, one jeq per forbidden call (to kill),
	// the clone check, then allow and kill.
	n := len(forbidden)
	// Instruction indexes, counted from 0.
	allowAt := 3 + n + 3
	killAt := allowAt + 1
	prog := []unix.SockFilter{
		{Code: ld, K: offArch},
		{Code: jeq, K: unix.AUDIT_ARCH_X86_64, Jt: 0, Jf: uint8(allowAt - 2)},
		{Code: ld, K: offNr},
	}
	for i, nr := range forbidden {
		at := 3 + i
		prog = append(prog, unix.SockFilter{Code: jeq, K: nr, Jt: uint8(killAt - at - 1)})
	}
	at := 3 + n
	prog = append(prog,
		unix.SockFilter{Code: jeq, K: unix.SYS_CLONE, Jt: 0, Jf: uint8(allowAt - at - 1)},
		unix.SockFilter{Code: ld, K: offArg0},
		unix.SockFilter{Code: jset, K: unix.CLONE_THREAD, Jt: uint8(allowAt - at - 3), Jf: uint8(killAt - at - 3)},
		unix.SockFilter{Code: ret, K: allow},
		unix.SockFilter{Code: ret, K: kill},
	)
	if len(prog) != killAt+1 {
		return fmt.Errorf("noexec: filter of %d instructions, want %d", len(prog), killAt+1)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("noexec: PR_SET_NO_NEW_PRIVS: %v", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("noexec: seccomp: %v", errno)
	}
	return nil
}
