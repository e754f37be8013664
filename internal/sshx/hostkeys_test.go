package sshx

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func newPub(t *testing.T) ssh.PublicKey {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestHostKeyCallback(t *testing.T) {
	known, other, stranger := newPub(t), newPub(t), newPub(t)
	file := filepath.Join(t.TempDir(), "known_hosts")
	lines := "# comment\n" + knownhosts.Line([]string{"[node-a]:2222"}, known) + "\n"
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	hk, err := loadHostKeys(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := hk.callback("node-a:2222", literalAddr("node-a:2222"), known); err != nil {
		t.Fatalf("known key refused: %v", err)
	}

	err = hk.callback("node-a:2222", literalAddr("node-a:2222"), other)
	var hke *HostKeyError
	if !errors.As(err, &hke) || len(hke.Known) != 1 {
		t.Fatalf("changed key: err = %v", err)
	}
	for _, want := range []string{"node-a:2222", "CHANGED", ssh.FingerprintSHA256(other), ssh.FingerprintSHA256(known), file + ":2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("changed-key message %q lacks %q", err, want)
		}
	}

	err = hk.callback("node-b:22", literalAddr("node-b:22"), stranger)
	if !errors.As(err, &hke) || len(hke.Known) != 0 {
		t.Fatalf("unknown host: err = %v", err)
	}
	for _, want := range []string{"node-b:22", "unknown", ssh.FingerprintSHA256(stranger), file, "ssh-keyscan -p 22 node-b"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("unknown-host message %q lacks %q", err, want)
		}
	}
	if Retryable(&ConnError{Err: hke}) {
		t.Error("a host key refusal is retryable")
	}

	algos, err := hk.algorithms("node-a:2222")
	if err != nil || len(algos) != 1 || algos[0] != ssh.KeyAlgoED25519 {
		t.Errorf("algorithms = %v, %v; want [%s]", algos, err, ssh.KeyAlgoED25519)
	}
	if algos, _ := hk.algorithms("node-b:22"); algos != nil {
		t.Errorf("unknown host algorithms = %v, want nil", algos)
	}
}

func TestNewPoolRequiresKnownHosts(t *testing.T) {
	if _, err := NewPool(Config{KeyFile: "x"}); err == nil || !strings.Contains(err.Error(), "known_hosts") {
		t.Errorf("err = %v", err)
	}
	if _, err := NewPool(Config{KnownHostsFile: filepath.Join(t.TempDir(), "absent")}); err == nil {
		t.Error("missing known_hosts file accepted")
	}
}

// A known_hosts file that does not exist says how to create it.
func TestMissingKnownHostsSaysHowToCreateIt(t *testing.T) {
	file := filepath.Join(t.TempDir(), "known_hosts")
	_, err := NewPool(Config{KnownHostsFile: file, AgentSocket: "/nonexistent"})
	if err == nil || !strings.Contains(err.Error(), file+" does not exist") || !strings.Contains(err.Error(), "ssh-keyscan -p PORT HOST >> "+file) {
		t.Errorf("NewPool with no known_hosts file: %v", err)
	}
}

// A host key refusal names its cause for sdk.CauseOf: unknown or changed.
func TestHostKeyErrorCause(t *testing.T) {
	unknown := &HostKeyError{Host: "n3:22", KnownHostsFile: "kh", KeyType: "ssh-ed25519", Fingerprint: "SHA256:x"}
	changed := *unknown
	changed.Known = []KnownKey{{File: "kh", Line: 3, KeyType: "ssh-ed25519", Fingerprint: "SHA256:y"}}
	if unknown.ObserveCause() != "host-key-unknown" || changed.ObserveCause() != "host-key-changed" {
		t.Errorf("causes %q and %q", unknown.ObserveCause(), changed.ObserveCause())
	}
	for _, want := range []string{"SHA256:x", "kh:3", "ssh-keygen -R n3 -f kh && ssh-keyscan -p 22 n3 >> kh"} {
		if !strings.Contains(changed.Error(), want) {
			t.Errorf("%q lacks %q", changed.Error(), want)
		}
	}
}
