//go:build e2e

package sshx_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"poolc.dev/poolc/internal/sshx"
	"poolc.dev/poolc/internal/testsshd"
)

func pool(t *testing.T, cfg sshx.Config) *sshx.Pool {
	t.Helper()
	p, err := sshx.NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestE2ERunNastyArgv(t *testing.T) {
	srv := testsshd.Start(t)
	c := pool(t, srv.ClientConfig()).Client(srv.Endpoint())
	ctx := context.Background()
	argv := []string{"", "it's", `"q"`, "$HOME", "$(touch /tmp/poolc-pwned)", "`id`", "a;b", "*", "~", "a\nb", "\\", "é", "-n"}
	out, err := c.Run(ctx, append([]string{"printf", `%s\0`}, argv...), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(string(out.Stdout), "\x00")
	got = got[:len(got)-1]
	if len(got) != len(argv) {
		t.Fatalf("remote saw %q, want %q", got, argv)
	}
	for i := range argv {
		if got[i] != argv[i] {
			t.Errorf("word %d: remote saw %q, want %q", i, got[i], argv[i])
		}
	}
	if _, err := os.Stat("/tmp/poolc-pwned"); err == nil {
		t.Error("a command substitution in an argument ran")
	}

	// stdin reaches the command; a failing command is an ExitError.
	out, err = c.Run(ctx, []string{"cat"}, strings.NewReader("through stdin"))
	if err != nil || string(out.Stdout) != "through stdin" {
		t.Errorf("cat: %q, %v", out.Stdout, err)
	}
	_, err = c.Run(ctx, []string{"sh", "-c", "echo oops >&2; exit 3"}, nil)
	var xe *sshx.ExitError
	if !errors.As(err, &xe) || xe.Status != 3 || !strings.Contains(err.Error(), "oops") {
		t.Errorf("exit 3: err = %v", err)
	}
	if sshx.Retryable(err) {
		t.Error("a command's exit status is retryable")
	}

	// A cancelled context kills the command.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.Run(cctx, []string{"sleep", "30"}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("sleep under a deadline: err = %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Error("cancel did not end the command")
	}
}

func TestE2EConnectionReusedAndRedialled(t *testing.T) {
	srv := testsshd.Start(t)
	c := pool(t, srv.ClientConfig()).Client(srv.Endpoint())
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if _, err := c.Run(ctx, []string{"true"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// One connection served the five commands: one sshd child per
	// connection (plus the session's shell, gone by now).
	if n := srv.KillSessions(t); n != 1 {
		t.Errorf("%d sshd processes for 5 commands on one connection, want 1", n)
	}
	// The killed connection is noticed and replaced.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.Run(ctx, []string{"true"}, nil)
		if err == nil {
			break
		}
		if !sshx.Retryable(err) || time.Now().After(deadline) {
			t.Fatalf("after the cut: %v", err)
		}
	}
}

func TestE2ETunnel(t *testing.T) {
	srv := testsshd.Start(t)
	c := pool(t, srv.ClientConfig()).Client(srv.Endpoint())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(conn, conn); conn.Close() }()
		}
	}()
	conn, err := c.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	msg := strings.Repeat("through the tunnel ", 10000)
	go func() { io.WriteString(conn, msg); conn.(interface{ CloseWrite() error }).CloseWrite() }()
	got, err := io.ReadAll(conn)
	if err != nil || string(got) != msg {
		t.Fatalf("echo through tunnel: %d bytes, %v", len(got), err)
	}
	conn.Close()

	// A port nothing listens on is refused as such.
	l2, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l2.Addr().String()
	l2.Close()
	if _, err := c.Dial(context.Background(), "tcp", dead); err == nil || !strings.Contains(err.Error(), "tunnel to "+dead) {
		t.Errorf("dial a closed port: %v\n%s", err, srv.Log())
	}
}

func TestE2EHostKeyRefused(t *testing.T) {
	srv := testsshd.Start(t)
	dir := t.TempDir()

	// Changed: known_hosts holds another key for this host.
	other := testsshd.NewKey(t, filepath.Join(dir, "other"))
	changed := filepath.Join(dir, "known_hosts_changed")
	os.WriteFile(changed, []byte("# line one\n"+srv.KnownHostsLine(other)+"\n"), 0o600)
	cfg := srv.ClientConfig()
	cfg.KnownHostsFile = changed
	_, err := pool(t, cfg).Client(srv.Endpoint()).Run(context.Background(), []string{"true"}, nil)
	var hke *sshx.HostKeyError
	if !errors.As(err, &hke) {
		t.Fatalf("changed key: err = %v", err)
	}
	for _, want := range []string{srv.Addr(), "CHANGED", ssh.FingerprintSHA256(srv.HostKey), ssh.FingerprintSHA256(other), changed + ":2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if sshx.Retryable(err) {
		t.Error("changed host key is retryable")
	}

	// Unknown: an empty known_hosts.
	empty := filepath.Join(dir, "known_hosts_empty")
	os.WriteFile(empty, nil, 0o600)
	cfg.KnownHostsFile = empty
	_, err = pool(t, cfg).Client(srv.Endpoint()).Dial(context.Background(), "tcp", "127.0.0.1:1")
	if !errors.As(err, &hke) {
		t.Fatalf("unknown host: err = %v", err)
	}
	for _, want := range []string{srv.Addr(), "unknown", ssh.FingerprintSHA256(srv.HostKey), empty} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}

func TestE2EUnauthorisedKey(t *testing.T) {
	srv := testsshd.Start(t)
	cfg := srv.ClientConfig()
	cfg.KeyFile = filepath.Join(t.TempDir(), "stranger")
	testsshd.NewKey(t, cfg.KeyFile)
	_, err := pool(t, cfg).Client(srv.Endpoint()).Run(context.Background(), []string{"true"}, nil)
	if !errors.Is(err, sshx.ErrAuth) || sshx.Retryable(err) {
		t.Errorf("unauthorised key: err = %v (retryable %v)", err, sshx.Retryable(err))
	}
}
