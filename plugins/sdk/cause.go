package sdk

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"syscall"
)

// CauseOf says why err kept a target from being observed. An error that
// knows (an SSH host key refusal, say) says so itself with a method
// ObserveCause() string returning one of the Cause values; otherwise a
// deadline or timeout is CauseTimeout, a refused connection
// CauseRefused, an unresolvable name or a network or host without a
// route (or a connection cut) CauseUnreachable, and anything else
// CauseOther.
func CauseOf(err error) Cause {
	var known interface{ ObserveCause() string }
	if errors.As(err, &known) {
		if c := Cause(known.ObserveCause()); slices.Contains(Causes(), c) {
			return c
		}
	}
	var dns *net.DNSError
	var nerr net.Error
	switch {
	case err == nil:
		return CauseOther
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &nerr) && nerr.Timeout():
		return CauseTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return CauseRefused
	case errors.As(err, &dns), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return CauseUnreachable
	}
	return CauseOther
}
