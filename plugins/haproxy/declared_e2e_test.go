//go:build e2e

package haproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/syncbuf"
)

// fakeLane answers GET /health 200 and any POST with its name, on
// addr (a loopback address of its own, as a node is a machine of its own).
func fakeLane(t *testing.T, addr, name string) (port int, stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, name)
	})}
	go srv.Serve(l)
	var once atomic.Bool
	stop = func() {
		if once.CompareAndSwap(false, true) {
			srv.Close()
		}
	}
	t.Cleanup(stop)
	return l.Addr().(*net.TCPAddr).Port, stop
}

// master is a haproxy in master-worker mode (-W) with its master CLI.
type master struct {
	bin, cfg, sock string
	cmd            *exec.Cmd
	log            *syncbuf.Buffer
	done           chan struct{}
}

func (m *master) start(t *testing.T, admin Dialer) {
	t.Helper()
	m.log = &syncbuf.Buffer{}
	m.cmd = exec.Command(m.bin, "-W", "-S", m.sock, "-f", m.cfg)
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m.done = make(chan struct{})
	go func() { m.cmd.Wait(); close(m.done) }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := (Runtime{Dial: admin}).Exec(context.Background(), "show", "info")
		if err == nil {
			_, err = (Runtime{Dial: UnixSocket(m.sock)}).Exec(context.Background(), "show", "proc")
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy's admin socket did not answer within 30s: %s", m.log.String())
		}
	}
}

func (m *master) stop() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		m.cmd.Process.Kill()
		<-m.done
	}
}

// ask posts a chat request for model to the gateway and returns the
// answer's body, or the status and body when it is not 200.
func ask(base, model string) string {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"`+model+`"}`))
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	return string(b)
}

func eventually(t *testing.T, what string, within time.Duration, f func() string, want string) time.Duration {
	t.Helper()
	start := time.Now()
	got := ""
	for time.Since(start) < within {
		if got = f(); got == want {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: got %q for %s, want %q", what, got, within, want)
	return 0
}

// TestE2EADeclaredGatewayKeepsItsRoutesAndFallsBack runs HAProxy as the
// haproxy plugin's config_file and master_socket have it, lanes on
// distinct loopback addresses: a restart and a reload keep every route
// (their addresses included); a lane that dies has its alias served by
// its fallback without any route change; a lane the configuration has no
// backend for is routed after poolc rewrites the file and reloads
// HAProxy itself; its alias removed, its server goes to maintenance.
func TestE2EADeclaredGatewayKeepsItsRoutesAndFallsBack(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	spec := testSpec(t, []LaneBackend{{Lane: "cognition"}, {Lane: "scribe"}},
		[]AliasRoute{{Alias: "chat", Lane: "cognition", Fallbacks: []string{"scribe"}}, {Alias: "notes", Lane: "scribe"}})
	spec.AdminSocket = filepath.Join(dir, "admin.sock")
	m := &master{bin: findHAProxy(t), cfg: filepath.Join(dir, "haproxy.cfg"), sock: filepath.Join(dir, "master.sock")}
	cfg, mapText, err := Config(spec)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(m.cfg, []byte(cfg), 0o644)
	os.WriteFile(spec.MapFile, []byte(mapText), 0o644)
	os.WriteFile(FallbackMapFile(spec.MapFile), []byte(FallbackMap(spec)), 0o644)
	admin := UnixSocket(spec.AdminSocket)
	m.start(t, admin)
	t.Cleanup(m.stop)
	gateway := func(s Spec) *Gateway {
		g, err := New(admin, LocalFiles{}, Options{MapFile: spec.MapFile, StateFile: spec.StateFile, DrainTimeout: 20 * time.Second,
			Poll: 20 * time.Millisecond, ConfigFile: m.cfg, Declared: &s, Master: UnixSocket(m.sock)})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g := gateway(spec)
	cogPort, killCognition := fakeLane(t, "127.0.0.2", "cognition")
	scribePort, _ := fakeLane(t, "127.0.0.3", "scribe")
	for alias, to := range map[string]*Endpoint{"chat": {Lane: "cognition", Node: "n1", Addr: "127.0.0.2", Port: cogPort},
		"notes": {Lane: "scribe", Node: "n2", Addr: "127.0.0.3", Port: scribePort}} {
		if err := g.Route(ctx, alias, to, nil); err != nil {
			t.Fatal(err)
		}
	}
	base := "http://" + spec.Bind
	served := func() string { return ask(base, "chat") + "," + ask(base, "notes") }
	eventually(t, "after the routes", 10*time.Second, served, "cognition,scribe")

	m.stop()
	m.start(t, admin)
	eventually(t, "after a restart", 10*time.Second, served, "cognition,scribe")
	if _, err := (Runtime{Dial: UnixSocket(m.sock)}).Exec(ctx, "reload"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "after a reload", 10*time.Second, served, "cognition,scribe")

	killCognition()
	took := eventually(t, "chat with its lane dead", 15*time.Second, func() string { return ask(base, "chat") }, "scribe")
	t.Logf("chat served by its fallback %s after its lane died", took.Round(100*time.Millisecond))

	grown := spec
	grown.Lanes = append(append([]LaneBackend(nil), spec.Lanes...), LaneBackend{Lane: "painter"})
	grown.Aliases = append(append([]AliasRoute(nil), spec.Aliases...), AliasRoute{Alias: "paint", Lane: "painter"})
	painterPort, _ := fakeLane(t, "127.0.0.4", "painter")
	if err := gateway(grown).Route(ctx, "paint", &Endpoint{Lane: "painter", Node: "n3", Addr: "127.0.0.4", Port: painterPort}, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new lane", 10*time.Second, func() string { return ask(base, "paint") + "," + ask(base, "notes") }, "painter,scribe")

	if err := g.Route(ctx, "paint", nil, nil); err != nil {
		t.Fatal(err)
	}
	out, err := (Runtime{Dial: admin}).Exec(ctx, "show", "servers", "state", "lane_painter")
	if err != nil {
		t.Fatal(err)
	}
	srvs, _ := parseServersState(out)
	for _, s := range srvs {
		if !s.Maint() {
			t.Errorf("lane painter, no longer declared, keeps server %s live at %s:%d", s.Name, s.Addr, s.Port)
		}
	}
}
