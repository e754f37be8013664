package llama

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"poolc.dev/poolc/internal/sshx"
)

// session is the node's host as every component reaches it, with the
// settings that bound what runs there: each remote command runs within
// a time bound (past it, killed with its process group) and each probe
// of a lane within ProbeTimeout. The components of a Node share one.
type session struct {
	host Host
	set  Settings
}

// run runs program with positional parameters args on the host within
// the settings' CommandTimeout.
func (s *session) run(ctx context.Context, program string, args ...string) (string, error) {
	return s.runFor(ctx, s.set.CommandTimeout, program, args...)
}

// runFor is run within d.
func (s *session) runFor(ctx context.Context, d time.Duration, program string, args ...string) (string, error) {
	out, err := s.exec(ctx, d, shArgv(program, args...), nil)
	return string(out), err
}

// exec runs argv on the host within d: past it the command is killed
// (its process group with it) and the error is a *CommandTimeoutError.
func (s *session) exec(ctx context.Context, d time.Duration, argv []string, stdin io.Reader) ([]byte, error) {
	ctx2, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	out, err := s.host.Run(ctx2, argv, stdin)
	if err != nil && ctx.Err() == nil && errors.Is(ctx2.Err(), context.DeadlineExceeded) {
		return out, &CommandTimeoutError{Host: s.host.String(), Command: sshx.CommandName(argv), Timeout: d}
	}
	return out, err
}

// CommandTimeoutError is a remote command that did not finish within its
// bound; it was killed.
type CommandTimeoutError struct {
	Host    string
	Command string
	Timeout time.Duration
}

// Error implements error.
func (e *CommandTimeoutError) Error() string {
	return fmt.Sprintf("%s on %s did not finish within %s: killed", e.Command, e.Host, e.Timeout.Round(time.Millisecond))
}

// prober asks lane l of the node, each request bounded by the
// settings' ProbeTimeout.
func (s *session) prober(l Lane) prober {
	return prober{addr: l.probeAddr(), client: &http.Client{
		Timeout: s.set.ProbeTimeout,
		// No keep-alive: llama-server lingers on open connections when
		// told to stop, and a probe must never hold one.
		Transport: &http.Transport{DialContext: s.host.DialContext, DisableKeepAlives: true},
	}}
}
