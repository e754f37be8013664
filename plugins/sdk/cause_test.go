package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"poolc.dev/poolc/plugins/sdk"
)

// knows is an error that says its own cause, as sshx's host key errors do.
type knows string

func (k knows) Error() string        { return "it knows" }
func (k knows) ObserveCause() string { return string(k) }

func TestCauseOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want sdk.Cause
	}{
		{fmt.Errorf("observe: %w", context.DeadlineExceeded), sdk.CauseTimeout},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, sdk.CauseRefused},
		{&net.OpError{Op: "dial", Err: syscall.EHOSTUNREACH}, sdk.CauseUnreachable},
		{&net.DNSError{Err: "no such host", Name: "n3.lan"}, sdk.CauseUnreachable},
		{fmt.Errorf("ssh: %w", knows("host-key-changed")), sdk.CauseHostKeyChanged},
		{knows(""), sdk.CauseOther}, // says nothing: the rest decides
		{errors.New("sha256sum: exit status 1"), sdk.CauseOther},
	} {
		if got := sdk.CauseOf(c.err); got != c.want {
			t.Errorf("CauseOf(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}
