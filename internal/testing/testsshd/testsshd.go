// Package testsshd runs a real OpenSSH sshd on a loopback port for
// end-to-end tests: its own config, a host key and a client key generated
// for the test, an authorized_keys file admitting that client key and a
// known_hosts file listing the host key, all under the test's temporary
// directory. The server runs in the foreground as the current user and is
// stopped when the test ends. Without sshd the test fails (never skips)
// saying how to install it.
package testsshd

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/proctree"
	"poolc.dev/poolc/internal/testing/syncbuf"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"poolc.dev/poolc/internal/sshx"
)

// Missing is the failure message when no sshd binary is found.
const Missing = "sshd not found: apt-get install openssh-server (or bash .ci/install.d/sshd.sh)"

// Server is one running sshd.
type Server struct {
	// Host and Port are where sshd listens (Host is 127.0.0.1 unless
	// OnAddress says otherwise).
	Host string
	Port int
	// User is the login the client key is authorised for: the current user.
	User string
	// Dir holds the config, keys and log.
	Dir string
	// KnownHosts is a known_hosts file with this server's host key.
	KnownHosts string
	// ClientKey is the unencrypted private key file authorised to log in.
	ClientKey string
	// HostKey is the server's public host key.
	HostKey ssh.PublicKey

	cmd     *exec.Cmd
	log     *syncbuf.Buffer
	stopped chan struct{}
}

// Option adjusts the sshd configuration before start.
type Option func(*options)

type options struct {
	host   string
	env    []string
	noSFTP bool
}

// OnAddress makes sshd listen on another loopback address (127.0.0.2,
// ...) instead of 127.0.0.1, so that several "nodes" on one machine each
// have an address of their own for the services they run.
func OnAddress(addr string) Option {
	return func(o *options) { o.host = addr }
}

// WithEnv sets NAME=VALUE variables (no spaces or quotes in them) in the
// environment of every session, after sshd's own (PATH and HOME too).
// sshd takes the first SetEnv line alone, so they join the one it has.
func WithEnv(vars ...string) Option {
	return func(o *options) { o.env = append(o.env, vars...) }
}

// WithoutSFTP leaves out the sftp subsystem, as on a node whose sshd
// offers none.
func WithoutSFTP() Option {
	return func(o *options) { o.noSFTP = true }
}

// Start launches sshd for t and stops it when t ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var o options
	for _, f := range opts {
		f(&o)
	}
	bin := findSSHD()
	if bin == "" {
		t.Fatal(Missing)
	}
	// sshd insists on its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("testsshd: %v", err)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatalf("testsshd: current user: %v", err)
	}
	dir := t.TempDir()
	s := &Server{Host: "127.0.0.1", User: u.Username, Dir: dir}
	if o.host != "" {
		ip := net.ParseIP(o.host)
		if ip == nil || !ip.IsLoopback() {
			t.Fatalf("testsshd: %q is not a loopback address", o.host)
		}
		s.Host = o.host
	}

	hostPub := writeKey(t, filepath.Join(dir, "host_ed25519"))
	s.HostKey = hostPub
	s.ClientKey = filepath.Join(dir, "client_ed25519")
	clientPub := writeKey(t, s.ClientKey)
	writeFile(t, filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(clientPub), 0o600)

	var lastErr string
	for attempt := 0; attempt < 5; attempt++ {
		s.Port = freePort(t, s.Host)
		s.KnownHosts = filepath.Join(dir, "known_hosts")
		writeFile(t, s.KnownHosts, []byte(s.KnownHostsLine(hostPub)+"\n"), 0o600)
		cfg := filepath.Join(dir, "sshd_config")
		writeFile(t, cfg, []byte(s.config(o)), 0o600)
		if lastErr = s.start(bin, cfg); lastErr == "" {
			t.Cleanup(s.Stop)
			return s
		}
		if !strings.Contains(lastErr, "Address already in use") {
			break
		}
	}
	t.Fatalf("testsshd: sshd did not start: %s", lastErr)
	return nil
}

func (s *Server) config(o options) string {
	lines := []string{
		"Port " + strconv.Itoa(s.Port),
		"ListenAddress " + s.Host,
		"HostKey " + filepath.Join(s.Dir, "host_ed25519"),
		"PidFile none",
		"AuthorizedKeysFile " + filepath.Join(s.Dir, "authorized_keys"),
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"PermitRootLogin prohibit-password",
		"StrictModes no",
		"AllowTcpForwarding yes",
		"MaxStartups 64",
		"MaxSessions 64",
		"LogLevel VERBOSE",
		// Commands run in the test user's login shell. Bash reads
		// ~/.bashrc for a command sent over ssh when it is the top-level
		// shell, and an account's rc may do anything: root's here runs
		// pyenv rehash, which waits (up to a minute) for a machine-wide
		// lock that every other shell starting on a busy machine holds
		// in turn. Starting the shell at level 2 makes bash skip it.
		strings.Join(append([]string{"SetEnv SHLVL=1"}, o.env...), " "),
	}
	if !o.noSFTP {
		lines = append(lines, "Subsystem sftp internal-sftp")
	}
	return strings.Join(lines, "\n") + "\n"
}

// start runs sshd and waits until it answers with an SSH banner; it
// returns "" or what went wrong, with sshd's log.
func (s *Server) start(bin, cfg string) string {
	s.log = &syncbuf.Buffer{}
	s.cmd = exec.Command(bin, "-D", "-e", "-f", cfg)
	s.cmd.Stdout = s.log
	s.cmd.Stderr = s.log
	if err := s.cmd.Start(); err != nil {
		return err.Error()
	}
	s.stopped = make(chan struct{})
	go func() {
		s.cmd.Wait()
		close(s.stopped)
	}()
	// A loaded machine may take seconds to exec sshd and load its keys.
	const within = 30 * time.Second
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-s.stopped:
			return "sshd exited: " + s.log.String()
		default:
		}
		if c, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond); err == nil {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			banner := make([]byte, 4)
			_, err := c.Read(banner)
			c.Close()
			if err == nil && string(banner) == "SSH-" {
				return ""
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	return "sshd did not answer within " + within.String() + ": " + s.log.String()
}

// Addr returns HOST:PORT.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Endpoint is the login of the authorised client key.
func (s *Server) Endpoint() sshx.Endpoint {
	return sshx.Endpoint{User: s.User, Host: s.Host, Port: s.Port}
}

// ClientConfig is an sshx configuration that logs in with the client key
// and verifies the host against KnownHosts (and no agent).
func (s *Server) ClientConfig() sshx.Config {
	return sshx.Config{KnownHostsFile: s.KnownHosts, KeyFile: s.ClientKey, NoAgent: true}
}

// KnownHostsLine returns the known_hosts line giving key to this server's
// address ([HOST]:PORT).
func (s *Server) KnownHostsLine(key ssh.PublicKey) string {
	return knownhosts.Line([]string{knownhosts.Normalize(s.Addr())}, key)
}

// Log returns what sshd has logged so far.
func (s *Server) Log() string { return s.log.String() }

// KillSessions kills, with SIGKILL, every process sshd forked to serve a
// connection (and their children), cutting every open connection and
// tunnel at once while the listener keeps accepting new ones. It returns
// how many processes it killed.
func (s *Server) KillSessions(t testing.TB) int {
	t.Helper()
	pids := proctree.Descendants(s.cmd.Process.Pid)
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

// Restart starts a stopped sshd again on the same address, port, keys
// and configuration, as a node's sshd coming back.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if msg := s.start(findSSHD(), filepath.Join(s.Dir, "sshd_config")); msg != "" {
		t.Fatalf("testsshd: sshd did not start again: %s", msg)
	}
}

// Stop kills sshd and every session; calling it twice is harmless.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	for _, pid := range proctree.Descendants(s.cmd.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	s.cmd.Process.Kill()
	<-s.stopped
}

func findSSHD() string {
	if p, err := exec.LookPath("sshd"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// freePort returns a port of host nothing listens on right now.
func freePort(t testing.TB, host string) int {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("testsshd: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// NewKey generates an ed25519 key pair, writes the private key to path
// (OpenSSH format, mode 0600) and returns the public key. Tests use it for
// a second host key (a "changed key") or a key sshd does not authorise.
func NewKey(t testing.TB, path string) ssh.PublicKey { return writeKey(t, path) }

func writeKey(t testing.TB, path string) ssh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, pem.EncodeToMemory(block), 0o600)
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func writeFile(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatalf("testsshd: %v", err)
	}
}
