// Package sshx is poolc's SSH client: it reaches a node or a pod-pool
// member's host as a user, with keys from the SSH agent or a key file, and
// verifies the host's key against a known_hosts file (an unknown or changed
// key is refused, never ignored). A Pool keeps one connection per
// user@host:port, reused by every call and redialled when it died; through
// it a Client runs commands (every argument quoted by Quote, never a command
// string built from unquoted input), opens direct-tcpip tunnels to ports
// on the far side, and writes files over SFTP (WriteFrom: an append from
// an offset, resumable, with progress in bytes).
//
// The remote login shell must be a POSIX shell (sh, bash, dash, zsh, ksh):
// the quoting relies on POSIX single quotes.
package sshx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// Defaults for the zero fields of Config. They are the only place these
// values are written.
const (
	// DefaultConnectTimeout bounds the TCP connect to a host.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultHandshakeTimeout bounds the SSH handshake and authentication.
	DefaultHandshakeTimeout = 15 * time.Second
	// DefaultKeepaliveInterval is the time between keepalive requests on
	// an idle connection.
	DefaultKeepaliveInterval = 15 * time.Second
	// DefaultKeepaliveMissed is how many keepalives may go unanswered
	// before a connection is closed as dead.
	DefaultKeepaliveMissed = 3
	// DefaultPort is the TCP port of an Endpoint that names none.
	DefaultPort = 22
)

// Config says how a Pool authenticates and verifies hosts. KnownHostsFile
// is required; at least one of KeyFile and AgentSocket must yield a key.
type Config struct {
	// KnownHostsFile is the known_hosts file every host key is checked
	// against (OpenSSH format, hashed entries and [host]:port allowed).
	KnownHostsFile string
	// KeyFile is an unencrypted private key file (OpenSSH or PEM); "" uses
	// the agent only.
	KeyFile string
	// AgentSocket is the SSH agent's socket; "" means $SSH_AUTH_SOCK.
	AgentSocket string
	// NoAgent leaves the agent out, using KeyFile only.
	NoAgent bool
	// ConnectTimeout bounds the TCP connect (default DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// HandshakeTimeout bounds the SSH handshake and authentication
	// (default DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
	// KeepaliveInterval is the time between keepalive requests on an idle
	// connection (default DefaultKeepaliveInterval).
	KeepaliveInterval time.Duration
	// KeepaliveMissed is how many keepalives may go unanswered before the
	// connection is closed as dead (default DefaultKeepaliveMissed).
	KeepaliveMissed int
	// MaxOutput bounds what Run reads back of a command's stdout, and of
	// its stderr (default DefaultMaxOutput).
	MaxOutput int64
}

func (c Config) withDefaults() Config {
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.KeepaliveInterval <= 0 {
		c.KeepaliveInterval = DefaultKeepaliveInterval
	}
	if c.KeepaliveMissed <= 0 {
		c.KeepaliveMissed = DefaultKeepaliveMissed
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if c.NoAgent {
		c.AgentSocket = ""
	} else if c.AgentSocket == "" {
		c.AgentSocket = os.Getenv("SSH_AUTH_SOCK")
	}
	return c
}

// Endpoint names one SSH login: a user on a host's port. Port 0 means
// DefaultPort.
type Endpoint struct {
	User string
	Host string
	Port int
}

// Addr returns host:port, the form known_hosts lookups and dialling use.
func (e Endpoint) Addr() string {
	port := e.Port
	if port == 0 {
		port = DefaultPort
	}
	return net.JoinHostPort(e.Host, strconv.Itoa(port))
}

// String returns user@host:port, the key of a Pool's connections.
func (e Endpoint) String() string { return e.User + "@" + e.Addr() }

// Pool holds at most one live SSH connection per Endpoint, shared by all
// Clients of that endpoint. It is safe for concurrent use.
type Pool struct {
	cfg       Config
	hostKeys  *hostKeys
	keySigner ssh.Signer // nil without KeyFile

	mu      sync.Mutex
	entries map[string]*entry
	closed  bool
}

// entry is one endpoint's connection slot; mu serialises dialling so
// concurrent callers share one connection.
type entry struct {
	mu   sync.Mutex
	conn *conn
}

// conn is one live SSH connection and the signal of its end.
type conn struct {
	client *ssh.Client
	done   chan struct{} // closed when the connection has ended
}

func (c *conn) dead() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// NewPool checks cfg (the known_hosts file must be readable, the key file
// parseable) and returns an empty pool; no connection is made yet.
func NewPool(cfg Config) (*Pool, error) {
	cfg = cfg.withDefaults()
	if cfg.KnownHostsFile == "" {
		return nil, errors.New("sshx: no known_hosts file configured; host keys are always verified")
	}
	hk, err := loadHostKeys(cfg.KnownHostsFile)
	if err != nil {
		return nil, err
	}
	p := &Pool{cfg: cfg, hostKeys: hk, entries: map[string]*entry{}}
	if cfg.KeyFile != "" {
		pem, err := os.ReadFile(cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("sshx: key file: %w", err)
		}
		s, err := ssh.ParsePrivateKey(pem)
		if err != nil {
			var missing *ssh.PassphraseMissingError
			if errors.As(err, &missing) {
				return nil, fmt.Errorf("sshx: key file %s is encrypted; load it into the SSH agent instead", cfg.KeyFile)
			}
			return nil, fmt.Errorf("sshx: key file %s: %w", cfg.KeyFile, err)
		}
		p.keySigner = s
	}
	if p.keySigner == nil && cfg.AgentSocket == "" {
		return nil, errors.New("sshx: no SSH key: set SSH_AUTH_SOCK to a running agent or configure a key file")
	}
	return p, nil
}

// Client returns the handle that runs commands and opens tunnels on ep
// through the pool's shared connection. It does no I/O.
func (p *Pool) Client(ep Endpoint) *Client { return &Client{pool: p, ep: ep} }

// Close closes every connection; later calls fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	entries := p.entries
	p.entries = map[string]*entry{}
	p.mu.Unlock()
	for _, e := range entries {
		e.mu.Lock()
		if e.conn != nil {
			e.conn.client.Close()
		}
		e.mu.Unlock()
	}
	return nil
}

// get returns a live connection to ep, dialling one when there is none or
// the last one died. fresh reports whether it was just dialled.
func (p *Pool) get(ctx context.Context, ep Endpoint) (c *conn, fresh bool, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, false, errors.New("sshx: pool closed")
	}
	e := p.entries[ep.String()]
	if e == nil {
		e = &entry{}
		p.entries[ep.String()] = e
	}
	p.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn != nil && !e.conn.dead() {
		return e.conn, false, nil
	}
	c, err = p.dial(ctx, ep)
	if err != nil {
		return nil, false, err
	}
	e.conn = c
	return c, true, nil
}

// do runs op on a connection to ep. When op fails on a reused connection
// for any reason but the far side refusing a channel (the host rebooted,
// the network dropped the connection while it sat idle), the connection is
// closed, redialled and op tried once more: the failure was the
// connection's, not the operation's.
func (p *Pool) do(ctx context.Context, ep Endpoint, op func(*ssh.Client) error) error {
	c, fresh, err := p.get(ctx, ep)
	if err != nil {
		return err
	}
	err = op(c.client)
	var refused *ssh.OpenChannelError
	if err == nil || fresh || errors.As(err, &refused) || ctx.Err() != nil {
		return err
	}
	c.client.Close()
	<-c.done
	c, _, err = p.get(ctx, ep)
	if err != nil {
		return err
	}
	return op(c.client)
}

// dial connects to ep, verifies its host key, authenticates and starts the
// keepalive loop.
func (p *Pool) dial(ctx context.Context, ep Endpoint) (*conn, error) {
	if ep.User == "" || ep.Host == "" {
		return nil, fmt.Errorf("sshx: endpoint %q needs a user and a host", ep.String())
	}
	addr := ep.Addr()
	auth, closeAgent, err := p.authMethods()
	if err != nil {
		return nil, err
	}
	defer closeAgent()
	algos, err := p.hostKeys.algorithms(addr)
	if err != nil {
		return nil, err
	}
	cc := &ssh.ClientConfig{
		User:              ep.User,
		Auth:              auth,
		HostKeyCallback:   p.hostKeys.callback,
		HostKeyAlgorithms: algos,
		Timeout:           p.cfg.ConnectTimeout,
	}
	d := net.Dialer{Timeout: p.cfg.ConnectTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, &ConnError{Endpoint: ep, Err: err}
	}
	// The handshake is bounded by a deadline and by ctx.
	nc.SetDeadline(time.Now().Add(p.cfg.HandshakeTimeout))
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	sc, chans, reqs, err := ssh.NewClientConn(nc, addr, cc)
	interrupted := !stop()
	if err != nil || interrupted {
		nc.Close()
		if err == nil {
			err = ctx.Err()
		}
		var hke *HostKeyError
		if errors.As(err, &hke) {
			return nil, hke
		}
		if strings.Contains(err.Error(), "unable to authenticate") {
			err = fmt.Errorf("%w: %v", ErrAuth, err)
		}
		return nil, &ConnError{Endpoint: ep, Err: err}
	}
	nc.SetDeadline(time.Time{})
	c := &conn{client: ssh.NewClient(sc, chans, reqs), done: make(chan struct{})}
	go func() {
		c.client.Wait()
		close(c.done)
	}()
	go p.keepalive(c)
	return c, nil
}

// keepalive sends a keepalive request every interval and closes the
// connection when KeepaliveMissed in a row go unanswered.
func (p *Pool) keepalive(c *conn) {
	t := time.NewTicker(p.cfg.KeepaliveInterval)
	defer t.Stop()
	missed := 0
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		answered := make(chan error, 1)
		go func() {
			_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
			answered <- err
		}()
		select {
		case err := <-answered:
			if err != nil {
				c.client.Close()
				return
			}
			missed = 0
		case <-time.After(p.cfg.KeepaliveInterval):
			missed++
			if missed >= p.cfg.KeepaliveMissed {
				c.client.Close()
				return
			}
		case <-c.done:
			return
		}
	}
}

// authMethods returns the key file's signer and the agent's keys, and a
// function closing the agent connection after the handshake.
func (p *Pool) authMethods() ([]ssh.AuthMethod, func(), error) {
	var signers []ssh.Signer
	if p.keySigner != nil {
		signers = append(signers, p.keySigner)
	}
	closeAgent := func() {}
	if p.cfg.AgentSocket != "" {
		ac, err := net.Dial("unix", p.cfg.AgentSocket)
		if err != nil {
			if len(signers) == 0 {
				return nil, nil, fmt.Errorf("sshx: SSH agent at %s: %w", p.cfg.AgentSocket, err)
			}
		} else {
			closeAgent = func() { ac.Close() }
			keys, err := agent.NewClient(ac).Signers()
			if err == nil {
				signers = append(signers, keys...)
			}
		}
	}
	if len(signers) == 0 {
		closeAgent()
		return nil, nil, errors.New("sshx: no SSH key: the agent holds none and no key file is configured")
	}
	return []ssh.AuthMethod{ssh.PublicKeys(signers...)}, closeAgent, nil
}

// ErrAuth marks a ConnError where the host refused every key offered; a
// retry does not help until the key is authorised.
var ErrAuth = errors.New("no offered key was accepted")

// ConnError is a failure to reach or keep an SSH connection (refused,
// timed out, cut, authentication refused). Retrying later may succeed,
// unlike a HostKeyError.
type ConnError struct {
	Endpoint Endpoint
	Err      error
}

// Error implements error.
func (e *ConnError) Error() string { return fmt.Sprintf("ssh %s: %v", e.Endpoint, e.Err) }

// Unwrap returns the underlying error.
func (e *ConnError) Unwrap() error { return e.Err }

// ObserveCause says, in the terms of sdk.CauseOf, that a host that refused
// every key was "refused"; for other failures it says nothing ("") and
// leaves the cause to the network error it wraps.
func (e *ConnError) ObserveCause() string {
	if errors.Is(e.Err, ErrAuth) {
		return "refused"
	}
	return ""
}
