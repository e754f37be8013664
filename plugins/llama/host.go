package llama

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"

	"poolc.dev/poolc/internal/sshx"
)

// Host is the machine a node's lanes run on, as the actuator reaches it:
// it runs a program with exactly the argv given (never a command line
// parsed from input) and opens TCP connections from the host's side, to
// the lanes' HTTP ports.
type Host interface {
	// Run executes argv, feeding it stdin (nil for none), and returns its
	// standard output. A non-zero exit is an error carrying the stderr.
	Run(ctx context.Context, argv []string, stdin io.Reader) ([]byte, error)
	// DialContext connects to addr as the host itself would.
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	// String names the host in messages.
	String() string
}

// Local is the machine poolc runs on, as a Host: programs run directly
// with os/exec and connections are dialled locally.
type Local struct{}

var _ Host = Local{}

// Run implements Host.
func (Local) Run(ctx context.Context, argv []string, stdin io.Reader) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return out.Bytes(), ctx.Err()
		}
		return out.Bytes(), fmt.Errorf("%s: %v: %s", argv[0], err, bytes.TrimSpace(errb.Bytes()))
	}
	return out.Bytes(), nil
}

// DialContext implements Host.
func (Local) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func (Local) String() string { return "local" }

// SSH is a node reached through an sshx client: commands run through the
// login shell with every argument quoted by sshx.Quote, and connections
// are direct-tcpip tunnels from the node.
type SSH struct {
	Client *sshx.Client
}

var _ Host = SSH{}

// Run implements Host.
func (s SSH) Run(ctx context.Context, argv []string, stdin io.Reader) ([]byte, error) {
	out, err := s.Client.Run(ctx, argv, stdin)
	return out.Stdout, err
}

// DialContext implements Host.
func (s SSH) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return s.Client.Dial(ctx, network, addr)
}

func (s SSH) String() string { return s.Client.Endpoint().String() }
