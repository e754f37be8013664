//go:build e2e

package haproxy

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/syncbuf"
)

// missing is the failure message when no haproxy binary is found.
const missing = "haproxy not found: apt-get install haproxy (or bash .ci/install.d/haproxy.sh)"

// proxy is a haproxy running on loopback for a test.
type proxy struct {
	dir, cfg string
	// master is the master CLI's socket when haproxy runs in
	// master-worker mode (-W -S), "" otherwise.
	master string
	spec   Spec
	cmd    *exec.Cmd
	log    *syncbuf.Buffer
	exited chan struct{}
}

func findHAProxy(t *testing.T) string {
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy"
	}
	t.Fatal(missing)
	return ""
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// testSpec is a spec on loopback with its files under a fresh directory.
func testSpec(t *testing.T, lanes []LaneBackend, aliases []AliasRoute) Spec {
	dir := t.TempDir()
	return Spec{
		Bind:        "127.0.0.1:" + strconv.Itoa(freePort(t)),
		AdminSocket: filepath.Join(dir, "admin.sock"),
		MapFile:     filepath.Join(dir, "aliases.map"),
		StateFile:   filepath.Join(dir, "servers.state"),
		Lanes:       lanes,
		Aliases:     aliases,
	}
}

// startProxy writes spec's configuration and map, checks the config with
// haproxy -c and runs haproxy in the foreground until the test ends.
func startProxy(t *testing.T, spec Spec) *proxy { return startProxyOf(t, spec, false) }

// startMasterProxy is startProxy with haproxy in master-worker mode, its
// master CLI at master.sock beside the configuration.
func startMasterProxy(t *testing.T, spec Spec) *proxy { return startProxyOf(t, spec, true) }

func startProxyOf(t *testing.T, spec Spec, master bool) *proxy {
	t.Helper()
	bin := findHAProxy(t)
	cfg, mapText, err := Config(spec)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{dir: filepath.Dir(spec.MapFile), spec: spec}
	p.cfg = filepath.Join(p.dir, "haproxy.cfg")
	if master {
		p.master = filepath.Join(p.dir, "master.sock")
	}
	if err := os.WriteFile(p.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec.MapFile, []byte(mapText), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(FallbackMapFile(spec.MapFile), []byte(FallbackMap(spec)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", p.cfg).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c refuses the generated config: %v\n%s\n%s", err, out, cfg)
	}
	p.run(t, bin)
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) run(t *testing.T, bin string) {
	t.Helper()
	p.log = &syncbuf.Buffer{}
	p.cmd = exec.Command(bin, "-db", "-f", p.cfg)
	if p.master != "" {
		p.cmd = exec.Command(bin, "-W", "-db", "-S", p.master, "-f", p.cfg)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.exited = make(chan struct{})
	cmd, exited := p.cmd, p.exited // a reload replaces both
	go func() { cmd.Wait(); close(exited) }()
	rt := Runtime{Dial: p.localDialer()}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-p.exited:
			t.Fatalf("haproxy exited: %s", p.log.String())
		default:
		}
		if _, err := rt.Exec(context.Background(), "show", "info"); err == nil {
			return
		}
	}
	t.Fatalf("haproxy's admin socket did not answer within 30s: %s", p.log.String())
}

// reload starts a new haproxy on the same files that takes the listening
// sockets over from the running one (-x, through the admin socket's
// expose-fd listeners) and tells it to finish its sessions and exit
// (-sf), as a hitless reload does.
func (p *proxy) reload(t *testing.T) {
	t.Helper()
	old := p.cmd.Process.Pid
	oldExited := p.exited
	p.log = &syncbuf.Buffer{}
	p.cmd = exec.Command(findHAProxy(t), "-db", "-f", p.cfg, "-x", p.spec.AdminSocket, "-sf", strconv.Itoa(old))
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.exited = make(chan struct{})
	cmd, exited := p.cmd, p.exited
	go func() { cmd.Wait(); close(exited) }()
	select {
	case <-oldExited:
	case <-time.After(60 * time.Second):
		t.Fatalf("the old haproxy (pid %d) still runs 60s after a reload", old)
	}
	select {
	case <-p.exited:
		t.Fatalf("the reloaded haproxy exited: %s", p.log.String())
	default:
	}
}

// restart stops haproxy and starts it again on the same files.
func (p *proxy) restart(t *testing.T) {
	p.stop()
	p.run(t, findHAProxy(t))
}

func (p *proxy) stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	if p.master != "" {
		// The master takes its workers along on SIGTERM.
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
			return
		case <-time.After(10 * time.Second):
		}
	}
	p.cmd.Process.Kill()
	<-p.exited
}

// localDialer reaches the admin socket from this machine.
func (p *proxy) localDialer() Dialer {
	if addr, ok := strings.CutPrefix(p.spec.AdminSocket, "ipv4@"); ok {
		return func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	return UnixSocket(p.spec.AdminSocket)
}

func (p *proxy) gateway(t *testing.T) *Gateway {
	return p.gatewayThrough(t, p.localDialer(), LocalFiles{})
}

// gatewayThrough is a gateway reaching the admin socket with dial and
// writing its files with files.
func (p *proxy) gatewayThrough(t *testing.T, dial Dialer, files Files) *Gateway {
	g, err := New(dial, files, Options{MapFile: p.spec.MapFile, StateFile: p.spec.StateFile, DrainTimeout: 20 * time.Second, Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func (p *proxy) base() string { return "http://" + p.spec.Bind }

// TestE2ETheGoldenConfigIsValid has haproxy -c check the golden
// configuration, its file paths moved under a temporary directory.
func TestE2ETheGoldenConfigIsValid(t *testing.T) {
	bin := findHAProxy(t)
	cfg, err := os.ReadFile(filepath.Join("testdata", "spark.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	text := string(cfg)
	for _, p := range []string{"/run/haproxy/poolc.sock", "/var/lib/haproxy/poolc-servers.state", "/etc/haproxy/poolc-aliases.map"} {
		text = strings.ReplaceAll(text, p, filepath.Join(dir, filepath.Base(p)))
	}
	os.WriteFile(filepath.Join(dir, "poolc-aliases.map"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "poolc-aliases.map.fallbacks"), nil, 0o644)
	path := filepath.Join(dir, "haproxy.cfg")
	os.WriteFile(path, []byte(text), 0o644)
	if out, err := exec.Command(bin, "-c", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
}
