package sshx

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// hostKeys verifies host keys against one known_hosts file, read again at
// every dial so an operator's edit takes effect without a restart.
type hostKeys struct {
	file string
}

func loadHostKeys(file string) (*hostKeys, error) {
	if _, err := knownhosts.New(file); err != nil {
		return nil, knownHostsErr(file, err)
	}
	return &hostKeys{file: file}, nil
}

// knownHostsErr is a known_hosts file that cannot be read; a missing one
// says how to create it.
func knownHostsErr(file string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sshx: known_hosts file %s does not exist; host keys are always verified. Create it with the keys of your hosts, checking each fingerprint: ssh-keyscan -p PORT HOST >> %s", file, file)
	}
	return fmt.Errorf("sshx: known_hosts: %w", err)
}

// callback is the ssh.HostKeyCallback: it accepts exactly the keys the
// known_hosts file lists for the host and turns every refusal into a
// HostKeyError.
func (h *hostKeys) callback(hostname string, remote net.Addr, key ssh.PublicKey) error {
	check, err := knownhosts.New(h.file)
	if err != nil {
		return knownHostsErr(h.file, err)
	}
	err = check(hostname, remote, key)
	if err == nil {
		return nil
	}
	hke := &HostKeyError{Host: hostname, KnownHostsFile: h.file, KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key)}
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case errors.As(err, &ke):
		for _, w := range ke.Want {
			hke.Known = append(hke.Known, KnownKey{File: w.Filename, Line: w.Line, KeyType: w.Key.Type(), Fingerprint: ssh.FingerprintSHA256(w.Key)})
		}
	case errors.As(err, &re):
		hke.Revoked = &KnownKey{File: re.Revoked.Filename, Line: re.Revoked.Line, KeyType: key.Type(), Fingerprint: hke.Fingerprint}
	default:
		return err
	}
	return hke
}

// literalAddr is a net.Addr for a host:port that may be a name.
type literalAddr string

func (a literalAddr) Network() string { return "tcp" }
func (a literalAddr) String() string  { return string(a) }

var probeKey = sync.OnceValues(func() (ssh.PublicKey, error) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return ssh.NewPublicKey(pub)
})

// algorithms returns the host key algorithms matching the key types the
// known_hosts file holds for addr, so the server is asked for a key that can
// be verified instead of one of another type (which would read as a changed
// key). It returns nil for an unknown host: the handshake then refuses it
// with the key the server presents.
func (h *hostKeys) algorithms(addr string) ([]string, error) {
	check, err := knownhosts.New(h.file)
	if err != nil {
		return nil, knownHostsErr(h.file, err)
	}
	probe, err := probeKey()
	if err != nil {
		return nil, err
	}
	var ke *knownhosts.KeyError
	if err := check(addr, literalAddr(addr), probe); !errors.As(err, &ke) {
		return nil, nil
	}
	var algos []string
	seen := map[string]bool{}
	for _, w := range ke.Want {
		for _, a := range algorithmsFor(w.Key.Type()) {
			if !seen[a] {
				seen[a] = true
				algos = append(algos, a)
			}
		}
	}
	return algos, nil
}

// algorithmsFor lists the signature algorithms a host key of keyType can
// answer with.
func algorithmsFor(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}

// KnownKey is one known_hosts line involved in a refusal.
type KnownKey struct {
	File        string
	Line        int
	KeyType     string
	Fingerprint string
}

// String implements fmt.Stringer.
func (k KnownKey) String() string {
	return fmt.Sprintf("%s:%d (%s %s)", k.File, k.Line, k.KeyType, k.Fingerprint)
}

// HostKeyError refuses a host whose key is not the one known_hosts lists:
// unknown (Known empty), changed (Known lists what was expected) or revoked.
// It is never retryable: an operator must check the fingerprint.
type HostKeyError struct {
	Host           string // host:port as dialled
	KnownHostsFile string
	KeyType        string // of the key the host presented
	Fingerprint    string // SHA256 fingerprint of that key
	Known          []KnownKey
	Revoked        *KnownKey
}

// Error implements error. It names the host, the fingerprint the host
// presents and the known_hosts line to fix.
func (e *HostKeyError) Error() string {
	presented := e.KeyType + " " + e.Fingerprint
	host, port, _ := net.SplitHostPort(e.Host)
	scan := fmt.Sprintf("ssh-keyscan -p %s %s >> %s", port, host, e.KnownHostsFile)
	switch {
	case e.Revoked != nil:
		return fmt.Sprintf("host key of %s is REVOKED: it presents %s, marked @revoked at %s:%d; refusing to connect", e.Host, presented, e.Revoked.File, e.Revoked.Line)
	case len(e.Known) > 0:
		lines := make([]string, len(e.Known))
		for i, k := range e.Known {
			lines[i] = k.String()
		}
		return fmt.Sprintf("host key of %s has CHANGED: it presents %s, but known_hosts has %s; refusing to connect. If the host was re-keyed, check the new fingerprint, then replace that line: ssh-keygen -R %s -f %s && %s",
			e.Host, presented, strings.Join(lines, ", "), knownhosts.Normalize(e.Host), e.KnownHostsFile, scan)
	default:
		return fmt.Sprintf("host %s is unknown: its key %s is not in known_hosts %s; refusing to connect. Check the fingerprint, then add it: %s",
			e.Host, presented, e.KnownHostsFile, scan)
	}
}

// ObserveCause says why the host could not be observed, in the terms of
// sdk.CauseOf: its key is unknown, or changed (or revoked).
func (e *HostKeyError) ObserveCause() string {
	if len(e.Known) == 0 && e.Revoked == nil {
		return "host-key-unknown"
	}
	return "host-key-changed"
}
