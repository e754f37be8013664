//go:build !(linux && amd64)

package noexec

import "errors"

// Forbid would make the process unable to start another; it needs a
// seccomp filter, written for linux/amd64 only.
func Forbid() error { return errors.New("noexec: only on linux/amd64") }
