package llama

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"poolc.dev/poolc/internal/sshx"
)

// Host is the machine a node's lanes run on, as the actuator reaches it:
// it runs a program with exactly the argv given (never a command line
// parsed from input), writes files, and opens TCP connections from the
// host's side, to the lanes' HTTP ports.
type Host interface {
	// Run executes argv, feeding it stdin (nil for none), and returns its
	// standard output. A non-zero exit is an error carrying the stderr.
	Run(ctx context.Context, argv []string, stdin io.Reader) ([]byte, error)
	// WriteFrom makes the file at the absolute path hold its first offset
	// bytes, which must be there (the file's size is offset), followed
	// by what r yields, creating it (mode 0644) and its directory when
	// missing. A copy cut at any point leaves a whole prefix of the data.
	// progress, when not nil, receives the file's size as it grows. It
	// returns the bytes written.
	WriteFrom(ctx context.Context, path string, offset int64, r io.Reader, progress func(size int64)) (int64, error)
	// DialContext connects to addr as the host itself would.
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	// String names the host in messages.
	String() string
}

// Local is the machine poolc runs on, as a Host: programs run directly
// with os/exec, each in a process group of its own that a cancellation
// kills whole, and connections are dialled locally. MaxOutput bounds
// what is read back of a program's stdout and of its stderr (0:
// sshx.DefaultMaxOutput): a program writing more is killed.
type Local struct {
	MaxOutput int64
}

var _ Host = Local{}

// Run implements Host.
func (h Local) Run(ctx context.Context, argv []string, stdin io.Reader) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	max := h.MaxOutput
	if max <= 0 {
		max = sshx.DefaultMaxOutput
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	over := func() { cancel(&sshx.OutputLimitError{Argv: argv, Limit: max}) }
	out, errb := &sshx.LimitedBuffer{Max: max, Over: over}, &sshx.LimitedBuffer{Max: max, Over: over}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = stdin
	cmd.Stdout, cmd.Stderr = out, errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// What a killed group's strays hold open is not waited for long.
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if cause := context.Cause(ctx); ctx.Err() != nil {
			return out.Bytes(), cause
		}
		return out.Bytes(), fmt.Errorf("%s: %v: %s", argv[0], err, bytes.TrimSpace(errb.Bytes()))
	}
	return out.Bytes(), nil
}

// WriteFrom implements Host with os files.
func (Local) WriteFrom(ctx context.Context, path string, offset int64, r io.Reader, progress func(size int64)) (int64, error) {
	if err := checkPath("file", path); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, sshx.FileMode)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return sshx.AppendTo(ctx, f, path, offset, r, progress)
}

// DialContext implements Host.
func (Local) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// String implements fmt.Stringer.
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

// WriteFrom implements Host over SFTP, on the node's pooled connection.
func (s SSH) WriteFrom(ctx context.Context, path string, offset int64, r io.Reader, progress func(size int64)) (int64, error) {
	return s.Client.WriteFrom(ctx, path, offset, r, progress)
}

// DialContext implements Host.
func (s SSH) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return s.Client.Dial(ctx, network, addr)
}

// String implements fmt.Stringer.
func (s SSH) String() string { return s.Client.Endpoint().String() }

// scriptHome prints the login's home directory.
const scriptHome = `printf '%s' "$HOME"`

// loginHome is the home directory of the login on host, an absolute
// path, which a relative state_dir is relative to.
func loginHome(ctx context.Context, host Host) (string, error) {
	out, err := host.Run(ctx, shArgv(scriptHome), nil)
	if err != nil {
		return "", fmt.Errorf("reading the login's home directory: %w", err)
	}
	home := string(out)
	if err := checkPath("the login's home directory", home); err != nil {
		return "", err
	}
	return home, nil
}
