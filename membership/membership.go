// Package membership enrolls a pool's nodes in etcd and keeps their
// liveness there, so the planner learns which nodes are up from the nodes
// themselves rather than from an operator's edit.
//
// Keys, under the pool's prefix P (the state's, see etcdstore):
//
//	P/members/tokens/<sha256>  an enrolment token, by the hash of its
//	                           secret only: the node it is bound to and
//	                           its expiry; a lease removes it on expiry
//	P/members/nodes/<name>     an enrolled node: the hash of its agent
//	                           credential, when it joined
//	P/members/cordon/<name>    "cordoned" or "drained" (poolc node cordon|drain)
//	P/members/live/<name>      what the node's agent last reported, on the
//	                           agent's lease: gone TTL seconds after the
//	                           agent's last heartbeat
//
// A token is used once (join deletes it in the transaction that enrolls
// the node), serves only the node it names, and is never stored or
// printed after token create prints it. Text a node reports is stripped
// of control characters when it is published and again when it is read,
// since anyone with write access to etcd could have written it.
package membership

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	clientv3 "go.etcd.io/etcd/client/v3"

	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store/etcdstore"
)

// DefaultTokenTTL is how long an enrolment token is valid when token
// create is not told.
const DefaultTokenTTL = time.Hour

// tokenPrefix starts every token, so a leaked one is recognisable.
const tokenPrefix = "poolc-join-"

// Registry is the membership of one pool in etcd.
type Registry struct {
	cli    *clientv3.Client
	prefix string
	ttl    int
}

// New returns the membership of the pool under prefix (ending in "/"),
// whose agents' leases live ttl seconds past their last heartbeat.
func New(cli *clientv3.Client, prefix string, ttl int) *Registry {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &Registry{cli: cli, prefix: prefix, ttl: ttl}
}

func (r *Registry) key(kind, name string) string { return r.prefix + "members/" + kind + "/" + name }

func opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, etcdstore.OpTimeout)
}

// ErrBadToken is the one answer to a token that is unknown, used or
// expired: the node learns nothing about which.
var ErrBadToken = errors.New("the token is not valid: unknown, already used or expired; ask for a new one with poolc node token create")

// tokenRecord is what the store keeps of a token.
type tokenRecord struct {
	Node    string    `json:"node"`
	Expires time.Time `json:"expires"`
}

// nodeRecord is an enrolled node.
type nodeRecord struct {
	Name           string    `json:"name"`
	CredentialHash string    `json:"credential_sha256"`
	Joined         time.Time `json:"joined"`
}

// hash is the hex SHA-256 of a secret, the only form the store keeps.
func hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

func secret(prefix string) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("membership: no randomness: " + err.Error())
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// CheckName refuses a node name that is not one a pool may declare.
func CheckName(name string) error {
	if name == "" || len(name) > 63 {
		return fmt.Errorf("node name %q: want 1 to 63 characters", Clean(name))
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("node name %q: only letters, digits, '-', '_' and '.'", Clean(name))
		}
	}
	return nil
}

// CreateToken issues a token that enrolls node once, until ttl has
// passed. The token is returned, never stored: etcd keeps its hash.
func (r *Registry) CreateToken(ctx context.Context, node string, ttl time.Duration, now time.Time) (token string, expires time.Time, err error) {
	if err := CheckName(node); err != nil {
		return "", time.Time{}, err
	}
	if ttl < time.Second {
		return "", time.Time{}, fmt.Errorf("token lifetime %v: want at least a second", ttl)
	}
	token, expires = secret(tokenPrefix), now.Add(ttl).UTC().Truncate(time.Second)
	data, err := json.Marshal(tokenRecord{Node: node, Expires: expires})
	if err != nil {
		return "", time.Time{}, err
	}
	cctx, cancel := opCtx(ctx)
	defer cancel()
	lease, err := r.cli.Grant(cctx, int64((ttl+time.Second-1)/time.Second))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("storing the token: %w", err)
	}
	if _, err := r.cli.Put(cctx, r.key("tokens", hash(token)), string(data), clientv3.WithLease(lease.ID)); err != nil {
		return "", time.Time{}, fmt.Errorf("storing the token: %w", err)
	}
	return token, expires, nil
}

// Join enrolls node with token: the token must be bound to node and
// unexpired, and is used up in the same transaction. It returns the
// node's agent credential, for the node to keep; etcd keeps its hash. A
// node enrolled before is enrolled again (with a new credential) only
// with a token bound to it.
func (r *Registry) Join(ctx context.Context, token, node string, now time.Time) (credential string, err error) {
	if err := CheckName(node); err != nil {
		return "", err
	}
	if !strings.HasPrefix(token, tokenPrefix) {
		return "", ErrBadToken
	}
	cctx, cancel := opCtx(ctx)
	defer cancel()
	tk := r.key("tokens", hash(token))
	resp, err := r.cli.Get(cctx, tk)
	if err != nil {
		return "", fmt.Errorf("reading the token: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return "", ErrBadToken
	}
	var rec tokenRecord
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		return "", fmt.Errorf("the token's record: %w", err)
	}
	if !now.Before(rec.Expires) {
		return "", ErrBadToken
	}
	if subtle.ConstantTimeCompare([]byte(rec.Node), []byte(node)) != 1 {
		return "", fmt.Errorf("the token is bound to another node, not to %s: ask for a token for %s", node, node)
	}
	credential = secret("poolc-node-")
	data, err := json.Marshal(nodeRecord{Name: node, CredentialHash: hash(credential), Joined: now.UTC()})
	if err != nil {
		return "", err
	}
	txn, err := r.cli.Txn(cctx).
		If(clientv3.Compare(clientv3.ModRevision(tk), "=", resp.Kvs[0].ModRevision)).
		Then(clientv3.OpDelete(tk), clientv3.OpPut(r.key("nodes", node), string(data))).
		Commit()
	if err != nil {
		return "", fmt.Errorf("enrolling %s: %w", node, err)
	}
	if !txn.Succeeded { // used by another join meanwhile
		return "", ErrBadToken
	}
	return credential, nil
}

// enrolled reads a node's enrolment.
func (r *Registry) enrolled(ctx context.Context, node string) (*nodeRecord, error) {
	cctx, cancel := opCtx(ctx)
	defer cancel()
	resp, err := r.cli.Get(cctx, r.key("nodes", node))
	if err != nil {
		return nil, fmt.Errorf("reading the membership: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("node %s is not enrolled: run poolc node join on it with a token from poolc node token create --node %s", Clean(node), Clean(node))
	}
	var rec nodeRecord
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", resp.Kvs[0].Key, err)
	}
	return &rec, nil
}

// SetCordon cordons, drains (c) or uncordons ("") an enrolled node.
func (r *Registry) SetCordon(ctx context.Context, node string, c pools.Cordon) error {
	if _, err := r.enrolled(ctx, node); err != nil {
		return err
	}
	cctx, cancel := opCtx(ctx)
	defer cancel()
	var err error
	if c == "" {
		_, err = r.cli.Delete(cctx, r.key("cordon", node))
	} else {
		_, err = r.cli.Put(cctx, r.key("cordon", node), string(c))
	}
	if err != nil {
		return fmt.Errorf("writing the membership: %w", err)
	}
	return nil
}

// Leave removes a drained node from the membership: its enrolment, its
// cordon and its agent's lease (the agent stops on its next heartbeat).
// A node not drained is refused, so that its lanes move off first.
func (r *Registry) Leave(ctx context.Context, node string) error {
	m, err := r.Member(ctx, node)
	if err != nil {
		return err
	}
	if m.Cordon != pools.Drained {
		return fmt.Errorf("node %s is not drained: run poolc node drain %s and apply, so its lanes move off, then leave", node, node)
	}
	cctx, cancel := opCtx(ctx)
	defer cancel()
	if m.lease != 0 {
		if _, err := r.cli.Revoke(cctx, m.lease); err != nil {
			return fmt.Errorf("ending the agent's lease: %w", err)
		}
	}
	_, err = r.cli.Txn(cctx).Then(clientv3.OpDelete(r.key("nodes", node)), clientv3.OpDelete(r.key("cordon", node)), clientv3.OpDelete(r.key("live", node))).Commit()
	if err != nil {
		return fmt.Errorf("writing the membership: %w", err)
	}
	return nil
}

// Clean strips control characters (and the Unicode format characters
// that reorder text) from text a node reported, and bounds its length,
// so that it cannot rewrite an operator's terminal.
func Clean(s string) string {
	const most = 256
	var b strings.Builder
	for _, c := range s {
		if unicode.IsControl(c) || unicode.Is(unicode.Cf, c) || c == unicode.ReplacementChar {
			continue
		}
		if b.Len() >= most {
			b.WriteString("…")
			break
		}
		b.WriteRune(c)
	}
	return b.String()
}
