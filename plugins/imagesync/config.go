package imagesync

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"poolc.dev/poolc/internal/sshx"
	"poolc.dev/poolc/pools"
)

// DefaultRegistryHost is the address a member's registry listens on, as
// its host resolves it: k3d publishes a registry's port on the host's
// loopback and every interface.
const DefaultRegistryHost = "127.0.0.1"

// Config is the image-sync plugin's configuration (its config block).
// Source is where the pod pools' image comes from (ParseSource's forms;
// relative paths are resolved from the pool's directory); Sources gives
// one per image name when the plugin serves pools of several images.
// Without either, an image whose name starts with a registry host is read
// from that registry. Build names the build in the immutable tag.
// KnownHosts and Key are the SSH known_hosts and private key files (the
// agent is used when Key is empty), SSHUser the default login on member
// hosts. RegistryHost is the address the registry listens on as the
// member's host sees it (DefaultRegistryHost unless set). Parallel bounds
// the members synced at once (DefaultParallel unless set), Jobs the blobs
// sent at once to one member (DefaultJobs unless set). Registries gives
// per source registry how to reach it (RegistryConfig).
type Config struct {
	Source       string            `json:"source,omitempty"`
	Sources      map[string]string `json:"sources,omitempty"`
	Build        string            `json:"build,omitempty"`
	KnownHosts   string            `json:"known_hosts,omitempty"`
	Key          string            `json:"ssh_key,omitempty"`
	SSHUser      string            `json:"ssh_user,omitempty"`
	RegistryHost string            `json:"registry_host,omitempty"`
	Parallel     int               `json:"parallel,omitempty"`
	Jobs         int               `json:"jobs,omitempty"`

	Registries map[string]RegistryConfig `json:"registries,omitempty"`
}

// MemberTarget is a pod-pool member as image sync sees it: its name, the
// SSH host its cluster runs on ("" when its registry is reached from
// here directly), its registry (NAME:PORT as pods name it) and the
// repository of the pool's image.
type MemberTarget struct {
	Name       string
	SSHHost    string
	Registry   string
	Repository string
}

// SSHHost is a member's SSH login parsed from [USER@]HOST[:PORT].
type SSHHost struct {
	User string
	Host string
	Port int
}

// ParseSSHHost reads [USER@]HOST[:PORT] (an IPv6 host in brackets when a
// port follows). Port 0 means the default.
func ParseSSHHost(s string) (SSHHost, error) {
	var h SSHHost
	if s == "" || strings.ContainsAny(s, " \t\r\n\x00/") {
		return h, fmt.Errorf("ssh host %q: want [user@]host[:port]", s)
	}
	rest := s
	if u, r, ok := strings.Cut(s, "@"); ok {
		if u == "" || strings.ContainsAny(u, "@:") {
			return h, fmt.Errorf("ssh host %q: bad user", s)
		}
		h.User, rest = u, r
	}
	host, port, err := net.SplitHostPort(rest)
	if err != nil {
		if strings.Count(rest, ":") > 1 && !strings.HasPrefix(rest, "[") {
			host, port = rest, "" // a bare IPv6 address
		} else if strings.Contains(rest, ":") {
			return h, fmt.Errorf("ssh host %q: %v", s, err)
		} else {
			host, port = rest, ""
		}
	}
	if host == "" || strings.ContainsAny(host, "[]@") || (strings.Contains(host, ":") && net.ParseIP(host) == nil) {
		// (a host with a colon is an IPv6 address or nothing)
		return h, fmt.Errorf("ssh host %q: empty or bad host", s)
	}
	h.Host = host
	if port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return h, fmt.Errorf("ssh host %q: port %q is not 1-65535", s, port)
		}
		h.Port = p
	}
	return h, nil
}

// Reacher turns members into destinations: through SSH tunnels from one
// pool of connections, or directly.
type Reacher struct {
	cfg  Config
	pool *sshx.Pool // nil until a member needs SSH
}

// NewReacher checks cfg for reaching members. The SSH pool is made only
// when KnownHosts is set; a member with an SSH host then needs it.
func NewReacher(cfg Config, workDir string) (*Reacher, error) {
	r := &Reacher{cfg: cfg}
	if cfg.RegistryHost == "" {
		r.cfg.RegistryHost = DefaultRegistryHost
	}
	if cfg.KnownHosts != "" {
		p, err := sshx.NewPool(sshx.Config{KnownHostsFile: resolve(workDir, cfg.KnownHosts), KeyFile: resolve(workDir, cfg.Key)})
		if err != nil {
			return nil, err
		}
		r.pool = p
	}
	return r, nil
}

// Close closes the SSH connections.
func (r *Reacher) Close() error {
	if r.pool != nil {
		return r.pool.Close()
	}
	return nil
}

// Destination returns how to reach m's registry: a tunnel through m's SSH
// host to RegistryHost and the registry's port there, or, for a member
// without an SSH host, a connection from here to RegistryHost and that
// port.
func (r *Reacher) Destination(m MemberTarget) (Destination, error) {
	d := Destination{Member: m.Name, Registry: m.Registry, Repository: m.Repository}
	if m.Registry == "" {
		return d, fmt.Errorf("member %s has no registry", m.Name)
	}
	_, port, err := net.SplitHostPort(m.Registry)
	if err != nil {
		return d, fmt.Errorf("member %s: registry %q: want NAME:PORT", m.Name, m.Registry)
	}
	addr := net.JoinHostPort(r.cfg.RegistryHost, port)
	if m.SSHHost == "" {
		d.Tunnel = func(ctx context.Context) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		}
		return d, nil
	}
	h, err := ParseSSHHost(m.SSHHost)
	if err != nil {
		return d, fmt.Errorf("member %s: %w", m.Name, err)
	}
	if r.pool == nil {
		return d, errors.New("member " + m.Name + " is reached over SSH but the plugin config sets no known_hosts file; host keys are always verified")
	}
	if h.User == "" {
		h.User = r.cfg.SSHUser
	}
	if h.User == "" {
		return d, fmt.Errorf("member %s: no SSH user: write user@%s or set ssh_user in the plugin config", m.Name, m.SSHHost)
	}
	d.Tunnel = SSHTunnel(r.pool.Client(sshx.Endpoint{User: h.User, Host: h.Host, Port: h.Port}), addr)
	return d, nil
}

// resolve makes a relative path relative to dir.
func resolve(dir, p string) string {
	if p == "" || filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// SourceFor returns the source of a pod pool's image (its name, with or
// without a digest), resolving a relative layout or archive path from dir.
func (c Config) SourceFor(image, dir string) (Source, error) {
	name := pools.ImageName(image)
	s := c.Sources[name]
	if s == "" {
		s = c.Source
	}
	if s == "" {
		if _, ok := pools.StripImageRegistry(name); !ok {
			return Source{}, fmt.Errorf("no source for image %q: set source (or sources.%q) in the image-sync plugin's config, e.g. \"oci:build/oci\" or \"docker-archive:build/image.tar\"", name, name)
		}
		s = string(SourceRegistry) + ":" + name
	}
	src, err := ParseSource(s)
	if err != nil {
		return src, err
	}
	if src.Kind != SourceRegistry {
		src.Path = resolve(dir, src.Path)
	}
	return src, nil
}
