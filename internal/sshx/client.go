package sshx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"golang.org/x/crypto/ssh"
)

// Client runs commands and opens tunnels on one Endpoint through its Pool's
// shared connection. It is safe for concurrent use.
type Client struct {
	pool *Pool
	ep   Endpoint
}

// Endpoint returns the login this client uses.
func (c *Client) Endpoint() Endpoint { return c.ep }

// Output is what a command wrote.
type Output struct {
	Stdout []byte
	Stderr []byte
}

// Run executes argv on the remote host (every argument quoted by Quote, so
// the remote program receives exactly argv), feeding it stdin (nil for
// none), and returns what it wrote, each of stdout and stderr bounded by
// the pool's MaxOutput: a command writing more is killed and its error is
// an *OutputLimitError naming it. A non-zero exit is an *ExitError
// carrying the status and the stderr; a cancelled ctx kills the command
// (as Stream says) and returns ctx's error.
func (c *Client) Run(ctx context.Context, argv []string, stdin io.Reader) (Output, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	max := c.pool.cfg.MaxOutput
	over := func() { cancel(&OutputLimitError{Argv: argv, Limit: max}) }
	out, errb := &LimitedBuffer{Max: max, Over: over}, &LimitedBuffer{Max: max, Over: over}
	err := c.Stream(ctx, argv, stdin, out, errb)
	var ole *OutputLimitError
	if cause := context.Cause(ctx); err != nil && errors.As(cause, &ole) {
		err = ole
	}
	var xe *ExitError
	if errors.As(err, &xe) {
		xe.Stderr = errb.Bytes()
	}
	return Output{Stdout: out.Bytes(), Stderr: errb.Bytes()}, err
}

// Stream is Run writing the command's output to stdout and stderr as it
// comes instead of collecting it. A cancelled ctx sends the command
// SIGKILL (servers that honour signal requests), hangs up on it and kills
// its whole process group on the host through another session, so
// nothing it started in its group runs on; it returns ctx's error.
func (c *Client) Stream(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd, err := Command(argv)
	if err != nil {
		return err
	}
	var sess *ssh.Session
	err = c.pool.do(ctx, c.ep, func(cl *ssh.Client) error {
		s, err := cl.NewSession()
		if err != nil {
			return err
		}
		sess = s
		return nil
	})
	if err != nil {
		return c.connErr(err)
	}
	defer sess.Close()
	group := &pgidWriter{w: stderr}
	sess.Stdin = stdin
	sess.Stdout = stdout
	sess.Stderr = group
	if err := sess.Start(groupPrefix + cmd); err != nil {
		return c.connErr(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- sess.Wait() }()
	select {
	case err = <-waited:
		group.flush()
	case <-ctx.Done():
		sess.Signal(ssh.SIGKILL)
		sess.Close()
		c.killGroup(group.group())
		return ctx.Err()
	}
	var ee *ssh.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		return &ExitError{Argv: argv, Status: ee.ExitStatus(), Signal: ee.Signal()}
	default:
		// Among them ssh.ExitMissingError: the channel closed without an
		// exit status, the connection or the server went away under it.
		return c.connErr(err)
	}
}

// Dial opens a direct-tcpip channel from the remote host to addr (as the
// remote host resolves it, e.g. "127.0.0.1:5000" is the host's own
// loopback). network must be "tcp", "tcp4" or "tcp6". The returned
// connection ends when the SSH connection does.
func (c *Client) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("sshx: tunnel network %q is not tcp", network)
	}
	var nc net.Conn
	err := c.pool.do(ctx, c.ep, func(cl *ssh.Client) error {
		conn, err := cl.DialContext(ctx, network, addr)
		if err != nil {
			return err
		}
		nc = conn
		return nil
	})
	if err != nil {
		var open *ssh.OpenChannelError
		if errors.As(err, &open) {
			return nil, fmt.Errorf("ssh %s: tunnel to %s refused: %w", c.ep, addr, err)
		}
		return nil, c.connErr(err)
	}
	return nc, nil
}

// connErr classifies err: host key refusals stay HostKeyErrors, everything
// else about the connection becomes a ConnError.
func (c *Client) connErr(err error) error {
	var hke *HostKeyError
	var ce *ConnError
	if errors.As(err, &hke) || errors.As(err, &ce) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &ConnError{Endpoint: c.ep, Err: err}
}

// ExitError is a remote command that ran and exited unsuccessfully.
type ExitError struct {
	Argv   []string
	Status int
	Signal string // the signal that killed it, "" when it exited
	Stderr []byte
}

// Error implements error.
func (e *ExitError) Error() string {
	what := fmt.Sprintf("exit status %d", e.Status)
	if e.Signal != "" {
		what = "killed by signal " + e.Signal
	}
	msg := fmt.Sprintf("remote %s: %s", e.Argv[0], what)
	if s := bytes.TrimSpace(e.Stderr); len(s) > 0 {
		const max = 2000
		if len(s) > max {
			s = s[len(s)-max:]
		}
		msg += ": " + string(s)
	}
	return msg
}

// Retryable reports whether err is a failure of the SSH connection or
// tunnel that a later attempt may not meet (refused, timed out, cut). A
// HostKeyError, a command's own exit status and a cancellation are not.
func Retryable(err error) bool {
	var hke *HostKeyError
	if err == nil || errors.As(err, &hke) || errors.Is(err, ErrAuth) || errors.Is(err, context.Canceled) {
		return false
	}
	var ce *ConnError
	return errors.As(err, &ce)
}
