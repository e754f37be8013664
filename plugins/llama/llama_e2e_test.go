//go:build e2e

package llama

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"poolc.dev/poolc/internal/sshx"
	"poolc.dev/poolc/internal/testing/loadgen"
	"poolc.dev/poolc/internal/testing/testsshd"
)

// sshNode starts an sshd on loopback and returns a node reached through it.
func sshNode(t *testing.T, opts ...testsshd.Option) (*Node, *testsshd.Server) {
	t.Helper()
	srv := testsshd.Start(t, opts...)
	pool, err := sshx.NewPool(srv.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return NewNode(SSH{Client: pool.Client(srv.Endpoint())}, testSettings(t)), srv
}

func TestE2ELaneOverSSHStartsServesDrainsAndStops(t *testing.T) {
	ctx := context.Background()
	n, _ := sshNode(t)
	l := testLane(t, "cognition", 2_000_000, "chat")
	stopAtEnd(t, n, l)
	if err := n.Start(ctx, l, nil); err != nil {
		t.Fatal(err)
	}
	obs, err := n.Observe(ctx, nil)
	if err != nil || len(obs.Lanes) != 1 || obs.Lanes[0].Aliases[0] != "chat" {
		t.Fatalf("%+v %v", obs, err)
	}
	pid := obs.Lanes[0].PID
	streamed := make(chan error, 1)
	go func() {
		streamed <- loadgen.Send(ctx, http.DefaultClient, "http://"+l.probeAddr(), loadgen.Request{Model: "chat", MaxTokens: 50, IgnoreEOS: true})
	}()
	waitBusy(t, n, l)
	if err := n.Stop(ctx, l, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-streamed; err != nil {
		t.Errorf("stream in flight at stop: %v", err)
	}
	if processLives(pid) {
		t.Errorf("pid %d survives the stop", pid)
	}
}

// TestE2EALaneRunsAsAUnitOverSSH: with a service manager, the unit file
// reaches the node over SSH on stdin and every argument of the scripts
// quoted: the lane starts as a unit (the systemctl and launchctl
// stand-ins on the node's PATH), serves, stops, and its unit is gone.
func TestE2EALaneRunsAsAUnitOverSSH(t *testing.T) {
	for _, manager := range []string{ServiceSystemd, ServiceLaunchd} {
		t.Run(manager, func(t *testing.T) {
			ctx := context.Background()
			srv := testsshd.Start(t, testsshd.WithEnv(withServiceManager(t)...))
			pool, err := sshx.NewPool(srv.ClientConfig())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pool.Close() })
			set := testSettings(t)
			set.ServiceManager = manager
			n := NewNode(SSH{Client: pool.Client(srv.Endpoint())}, set)
			l := testLane(t, "cognition", 400_000, "chat")
			l.Args = []string{"--chat-template", "it's $HOME 100% \\ \"quoted\""}
			stopAtEnd(t, n, l)
			if err := n.Start(ctx, l, nil); err != nil {
				t.Fatal(err)
			}
			obs, err := n.Observe(ctx, nil)
			if err != nil || len(obs.Lanes) != 1 || len(obs.Drift) != 0 {
				t.Fatalf("%+v %v", obs, err)
			}
			unit := serviceManagers[manager].unit(l.key())
			if got := managerCases[manager].mainPID(t, unit); got != strconv.Itoa(obs.Lanes[0].PID) {
				t.Errorf("the unit's process %q, observed pid %d", got, obs.Lanes[0].PID)
			}
			cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(obs.Lanes[0].PID) + "/cmdline")
			if !strings.HasSuffix(string(cmdline), "\x00--chat-template\x00"+l.Args[1]+"\x00") {
				t.Errorf("the lane runs %q; want its last argument %q as it is", cmdline, l.Args[1])
			}
			if err := n.Stop(ctx, l, nil); err != nil {
				t.Fatal(err)
			}
			if processLives(obs.Lanes[0].PID) {
				t.Errorf("pid %d survives the stop", obs.Lanes[0].PID)
			}
			if _, err := os.Stat(managerCases[manager].file(unit)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("unit file after the stop: %v", err)
			}
		})
	}
}

func TestE2EAWrongHostKeyRefusesTheStep(t *testing.T) {
	srv := testsshd.Start(t)
	other := testsshd.NewKey(t, filepath.Join(t.TempDir(), "other"))
	cfg := srv.ClientConfig()
	cfg.KnownHostsFile = filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(cfg.KnownHostsFile, []byte(srv.KnownHostsLine(other)+"\n"), 0o600)
	pool, err := sshx.NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	n := NewNode(SSH{Client: pool.Client(srv.Endpoint())}, testSettings(t))
	l := testLane(t, "never", 1000)
	err = n.Start(context.Background(), l, nil)
	var hke *sshx.HostKeyError
	if !errors.As(err, &hke) {
		t.Fatalf("err = %v, want a host key refusal", err)
	}
	for _, want := range []string{srv.Addr(), "CHANGED", cfg.KnownHostsFile + ":1", ssh.FingerprintSHA256(srv.HostKey)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if sshx.Retryable(err) {
		t.Error("a host key refusal is retryable")
	}
}

func TestE2EAPrefetchCutMidwayResumesWithoutResending(t *testing.T) {
	ctx := context.Background()
	n, srv := sshNode(t)
	data, sum := weights(t, 48<<20)
	src := filepath.Join(t.TempDir(), "src.gguf")
	os.WriteFile(src, data, 0o644)
	dst := filepath.Join(t.TempDir(), "models", "m.gguf")
	var cut sync.Once
	var reported int64
	first, err := n.Prefetch(ctx, Model{Path: dst, Source: "file://" + src, SHA256: sum}, func(done, total int64) {
		reported = done
		if done > total/3 {
			cut.Do(func() { srv.KillSessions(t) })
		}
	})
	if err == nil {
		t.Fatal("the prefetch survived its session being killed")
	}
	fi, err := os.Stat(dst + ".part")
	if err != nil || fi.Size() == 0 || fi.Size() >= int64(len(data)) {
		t.Fatalf("partial copy after the cut: %v %v", fi, err)
	}
	arrived := fi.Size()
	// Each write is acknowledged before the next is sent, so what the
	// progress reported and the cut copy counted is what had arrived.
	if first.Sent != arrived || reported != arrived {
		t.Errorf("the cut copy counted %d bytes and reported %d; %d had arrived", first.Sent, reported, arrived)
	}
	res, err := n.Prefetch(ctx, Model{Path: dst, Source: "file://" + src, SHA256: sum}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.ResumedAt != arrived || res.Sent != int64(len(data))-arrived {
		t.Errorf("resume %+v; %d bytes had arrived of %d", res, arrived, len(data))
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, data) {
		t.Error("the resumed copy differs from the source")
	}
	t.Logf("cut after %d of %d bytes; the resume sent %d", arrived, len(data), res.Sent)
	// sshd logs each session it starts and closes. Each copy is one sftp
	// subsystem session, and the first was still open when the cut came:
	// the bytes were going through it, not through a command's stdin.
	sftp := sftpSessions(t, srv, 2)
	if closed := regexp.MustCompile(`Close session: user \S+ from ` + regexp.QuoteMeta(sftp[0]) + `\n`); closed.MatchString(srv.Log()) {
		t.Errorf("the first sftp session (%s) closed before the cut:\n%s", sftp[0], srv.Log())
	}
}

var sftpSessionRE = regexp.MustCompile(`Starting session: subsystem 'sftp' for \S+ from (\S+ port \d+ id \d+)`)

// sftpSessions waits until sshd has logged want sftp subsystem sessions
// (its log reaches the test through a pipe, a moment after the fact) and
// returns each one's "ADDR port P id N"; more than want fails the test.
func sftpSessions(t *testing.T, srv *testsshd.Server, want int) []string {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got = got[:0]
		for _, m := range sftpSessionRE.FindAllStringSubmatch(srv.Log(), -1) {
			got = append(got, m[1])
		}
		if len(got) >= want || time.Now().After(deadline) {
			break
		}
	}
	if len(got) != want {
		t.Fatalf("sshd logged %d sftp sessions, want %d, one per copy:\n%s", len(got), want, srv.Log())
	}
	return got
}

func TestE2EAPrefetchWithAWrongDigestLeavesNoFile(t *testing.T) {
	n, srv := sshNode(t)
	data, _ := weights(t, 200_000)
	_, other := weights(t, 1)
	src := filepath.Join(t.TempDir(), "src.gguf")
	os.WriteFile(src, data, 0o644)
	dir := filepath.Join(t.TempDir(), "models")
	_, err := n.Prefetch(context.Background(), Model{Path: filepath.Join(dir, "m.gguf"), Source: "file://" + src, SHA256: other}, nil)
	var de *DigestError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left: %v", entries)
	}
	sftpSessions(t, srv, 1)
}

// TestE2EAFileSourceToANodeWithoutSFTPFailsAndTheConnectionServesOn: a
// node whose sshd offers no sftp subsystem fails the prefetch of a
// file:// source with a message saying so and leaves nothing at the
// model's path; the node's connection is not dropped for it, so the
// next command runs on the same connection.
func TestE2EAFileSourceToANodeWithoutSFTPFailsAndTheConnectionServesOn(t *testing.T) {
	ctx := context.Background()
	n, srv := sshNode(t, testsshd.WithoutSFTP())
	data, sum := weights(t, 100_000)
	src := filepath.Join(t.TempDir(), "src.gguf")
	os.WriteFile(src, data, 0o644)
	dir := filepath.Join(t.TempDir(), "models")
	_, err := n.Prefetch(ctx, Model{Path: filepath.Join(dir, "m.gguf"), Source: "file://" + src, SHA256: sum}, nil)
	if err == nil || !strings.Contains(err.Error(), "no sftp subsystem") {
		t.Fatalf("prefetch over an sshd without sftp: %v; want it refused for that", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "m.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the model's path after the refused copy: %v; want nothing there", err)
	}
	if _, err := n.Observe(ctx, nil); err != nil {
		t.Fatalf("observe after the refused copy: %v", err)
	}
	if got := strings.Count(srv.Log(), "Accepted publickey"); got != 1 {
		t.Errorf("sshd accepted %d logins; want 1: the connection serves on after the refusal\n%s", got, srv.Log())
	}
}
