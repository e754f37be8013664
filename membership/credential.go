package membership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"poolc.dev/poolc/internal/atomicfile"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store/etcdstore"
)

// JoinTokenEnv is where node join finds its token when --token is not
// given: a command line is visible to every user of the machine.
const JoinTokenEnv = "POOLC_JOIN_TOKEN"

// Open connects to the membership of pool p, which lives in the etcd of
// its state block (TLS files relative to dir). The caller closes it.
func Open(p *pools.Pool, dir string) (*Registry, func() error, error) {
	sb := p.State
	if sb.Backend != "etcd" {
		return nil, nil, fmt.Errorf(`pool %s keeps its state in a file: node membership lives in etcd; set state { backend = "etcd" endpoints = [...] }`, p.Name)
	}
	cli, err := etcdstore.Connect(sb, dir)
	if err != nil {
		return nil, nil, err
	}
	return New(cli, etcdstore.Prefix(sb, p.Name), etcdstore.TTL(sb)), cli.Close, nil
}

// Credential is what node join leaves on the node for its agent: the
// file, readable by its owner only, that node agent reads.
type Credential struct {
	Pool       string `json:"pool"`
	Node       string `json:"node"`
	Credential string `json:"credential"`
}

// CredentialPath is where a node of pool keeps its credential: flag when
// set, else node-POOL.json in poolc's directory of the user's config
// directory.
func CredentialPath(flag, pool string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no place for the node's credential (%v): pass --credential FILE", err)
	}
	return filepath.Join(dir, "poolc", "node-"+pool+".json"), nil
}

// ReadCredential reads the credential at path, refusing one of a node
// of another pool than pool.
func ReadCredential(path, pool string) (*Credential, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the credential: %w (run poolc node join first)", err)
	}
	var c Credential
	if err := json.Unmarshal(data, &c); err != nil || c.Credential == "" {
		return nil, fmt.Errorf("%s: not a node credential", path)
	}
	if c.Pool != pool {
		return nil, fmt.Errorf("%s is the credential of a node of pool %s, not %s", path, c.Pool, pool)
	}
	return &c, nil
}

// Enrolment asks to enroll a node of a pool with a join token.
type Enrolment struct {
	// Pool is the pool the node is declared in.
	Pool *pools.Pool
	// Token is the join token; "" reads JoinTokenEnv.
	Token string
	// Node is the node's name; "" is the host name up to its first dot.
	Node string
	// CredentialFile is where the credential goes; "" is
	// CredentialPath's default.
	CredentialFile string
	// Now is when the token is used.
	Now time.Time
}

// Enrolled is an enrolled node and where its credential was written.
type Enrolled struct {
	Node, CredentialFile string
}

// Enroll uses the enrolment's token to enroll its node in r and writes
// the node's agent credential, owner-readable, where node agent finds it.
func (r *Registry) Enroll(ctx context.Context, e Enrolment) (*Enrolled, error) {
	tok := e.Token
	if tok == "" {
		tok = os.Getenv(JoinTokenEnv)
	}
	if tok == "" {
		return nil, fmt.Errorf("no token: set %s or pass --token", JoinTokenEnv)
	}
	name := e.Node
	if name == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("no host name (%v): pass --node", err)
		}
		name, _, _ = strings.Cut(host, ".")
	}
	if e.Pool.Node(name) == nil {
		return nil, fmt.Errorf("node %q: no such node in pool %s; pass --node", Clean(name), e.Pool.Name)
	}
	path, err := CredentialPath(e.CredentialFile, e.Pool.Name)
	if err != nil {
		return nil, err
	}
	secret, err := r.Join(ctx, tok, name, e.Now)
	if err != nil {
		return nil, err
	}
	data, _ := json.MarshalIndent(Credential{Pool: e.Pool.Name, Node: name, Credential: secret}, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(path, append(data, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("writing the credential (the node is enrolled; join again with a new token): %w", err)
	}
	return &Enrolled{Node: name, CredentialFile: path}, nil
}

// CreateNodeToken is CreateToken for a node pool p declares; another
// name is refused.
func (r *Registry) CreateNodeToken(ctx context.Context, p *pools.Pool, node string, ttl time.Duration, now time.Time) (string, time.Time, error) {
	if p.Node(node) == nil {
		return "", time.Time{}, fmt.Errorf("--node %q: no such node in pool %s", Clean(node), p.Name)
	}
	return r.CreateToken(ctx, node, ttl, now)
}

// AgentFor is the agent of the node whose credential lies at
// credentialFile ("" is CredentialPath's default), reporting every
// interval what it reads under proc.
func (r *Registry) AgentFor(p *pools.Pool, credentialFile string, interval time.Duration, proc string) (*Agent, error) {
	path, err := CredentialPath(credentialFile, p.Name)
	if err != nil {
		return nil, err
	}
	c, err := ReadCredential(path, p.Name)
	if err != nil {
		return nil, err
	}
	if interval <= 0 {
		return nil, errors.New("--interval must be positive")
	}
	return &Agent{Registry: r, Node: c.Node, Credential: c.Credential, Interval: interval, Sample: Sampler{Proc: proc}.Sample}, nil
}

// LeaseTTL is how many seconds an agent's lease lives past its last
// heartbeat.
func (r *Registry) LeaseTTL() int { return r.ttl }
