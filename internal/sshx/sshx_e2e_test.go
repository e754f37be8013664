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
	"poolc.dev/poolc/internal/testing/testsshd"
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

func TestE2EWriteFromCreatesResumesAndRefusesAWrongOffset(t *testing.T) {
	srv := testsshd.Start(t)
	c := pool(t, srv.ClientConfig()).Client(srv.Endpoint())
	ctx := context.Background()
	data := make([]byte, 200_000)
	for i := range data {
		data[i] = byte(i * 31)
	}
	dst := filepath.Join(t.TempDir(), "a", "b", "m.part")

	// A new file in directories that do not exist yet: created, mode 0644.
	var sizes []int64
	n, err := c.WriteFrom(ctx, dst, 0, strings.NewReader(string(data[:70_000])), func(size int64) { sizes = append(sizes, size) })
	if err != nil || n != 70_000 {
		t.Fatalf("first write: %d, %v", n, err)
	}
	if len(sizes) < 2 || sizes[len(sizes)-1] != 70_000 {
		t.Errorf("progress %v, want several sizes ending at 70000", sizes)
	}
	for i := 1; i < len(sizes); i++ {
		if sizes[i] <= sizes[i-1] {
			t.Errorf("progress went from %d to %d", sizes[i-1], sizes[i])
		}
	}
	fi, err := os.Stat(dst)
	if err != nil || fi.Mode().Perm() != sshx.FileMode {
		t.Fatalf("created file: %v %v, want mode %v", fi, err, sshx.FileMode)
	}

	// The rest, from where the file ends: appended, nothing before again.
	sizes = sizes[:0]
	n, err = c.WriteFrom(ctx, dst, 70_000, strings.NewReader(string(data[70_000:])), func(size int64) { sizes = append(sizes, size) })
	if err != nil || n != int64(len(data))-70_000 || sizes[0] <= 70_000 || sizes[len(sizes)-1] != int64(len(data)) {
		t.Fatalf("resumed write: %d, %v, progress %v", n, err, sizes)
	}
	if got, _ := os.ReadFile(dst); string(got) != string(data) {
		t.Fatal("the file is not the data")
	}

	// An offset the file does not end at is refused, the file untouched.
	_, err = c.WriteFrom(ctx, dst, 1000, strings.NewReader("x"), nil)
	var oe *sshx.OffsetError
	if !errors.As(err, &oe) || oe.Size != int64(len(data)) || oe.Offset != 1000 || sshx.Retryable(err) {
		t.Errorf("wrong offset: %v", err)
	}
	if got, _ := os.ReadFile(dst); string(got) != string(data) {
		t.Error("a refused write changed the file")
	}
	if _, err := c.WriteFrom(ctx, "rel/m.part", 0, strings.NewReader("x"), nil); err == nil {
		t.Error("a relative path was accepted")
	}
	// A copy cancelled after its first write sends no other and leaves a
	// prefix of the data. (The cancel is seen before the next read, not
	// only when the session is closed for it, which a loaded machine may
	// get to after the copy ended.)
	cctx, cancel := context.WithCancel(ctx)
	cut := filepath.Join(t.TempDir(), "cut.part")
	n, err = c.WriteFrom(cctx, cut, 0, strings.NewReader(string(data)), func(size int64) { cancel() })
	if !errors.Is(err, context.Canceled) || n != 32<<10 {
		t.Errorf("cancelled write: %d, %v; want 32768 (one write), context canceled", n, err)
	}
	if got, _ := os.ReadFile(cut); !strings.HasPrefix(string(data), string(got)) {
		t.Errorf("the cancelled copy left %d bytes that are not a prefix", len(got))
	}
	// A reader's failure is its own, not the connection's.
	boom := errors.New("source unreadable")
	_, err = c.WriteFrom(ctx, filepath.Join(t.TempDir(), "m"), 0, io.MultiReader(strings.NewReader("abc"), errReader{boom}), nil)
	if !errors.Is(err, boom) || sshx.Retryable(err) {
		t.Errorf("failing reader: %v", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
