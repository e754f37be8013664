package llama

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAStartOnAPortAnotherProcessHoldsFailsNamingIt: a llama-server
// poolc did not start serves the lane's very model on the lane's port.
// The start fails naming that process (pid and command line), adopts
// nothing and records nothing: no pidfile, no metadata; the process it
// launched (which could not bind) is not left behind (its log stays, to
// read), and the foreign one is not touched.
func TestAStartOnAPortAnotherProcessHoldsFailsNamingIt(t *testing.T) {
	ctx := context.Background()
	set := testSettings(t)
	n := NewNode(Local{}, set)
	l := testLane(t, "cognition", 200_000, "chat")
	foreign := exec.Command(set.Binary, "--host", l.Host, "--port", strconv.Itoa(l.Port), "-m", l.Model, "--alias", "chat", "--metrics", "--slots")
	foreign.Env = os.Environ()
	for k, v := range set.Env {
		foreign.Env = append(foreign.Env, k+"="+v)
	}
	if err := foreign.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { foreign.Process.Kill(); foreign.Wait() })
	p := n.session.prober(l)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if code, _, err := p.get(ctx, "/health"); err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the foreign server never answered")
		}
	}

	err := n.Start(ctx, l, nil)
	var held *PortHeldError
	if !errors.As(err, &held) || held.Holder.pid != foreign.Process.Pid || !strings.Contains(err.Error(), "pid "+strconv.Itoa(foreign.Process.Pid)+" ("+set.Binary+" --host") {
		t.Fatalf("start on a held port: %v", err)
	}
	t.Log(err)
	if files, _ := filepath.Glob(filepath.Join(set.StateDir, "cognition@*.[pj]*")); len(files) != 0 {
		t.Errorf("recorded: %v", files)
	}
	obs, err := n.Observe(ctx, nil)
	if err != nil || len(obs.Lanes) != 0 {
		t.Errorf("observed %+v %v", obs, err)
	}
	if foreign.ProcessState != nil || !processLives(foreign.Process.Pid) {
		t.Error("the foreign server was touched")
	}
}

func TestParseOwnerAndListenAddr(t *testing.T) {
	o, err := parseOwner("alive 1\nlisten\t0100007F\t42\tllama-server --port 8081\nlisten\t00000000\t0\t\nlisten\t00000000000000000000000001000000\t7\tx\nlisten\t127.0.0.2:8081\t9\ty\nlisten\t*:8081\t10\tz\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []listener{{"127.0.0.1", 42, "llama-server --port 8081"}, {"", 0, ""}, {"::1", 7, "x"}, {"127.0.0.2", 9, "y"}, {"", 10, "z"}}
	if !o.alive || len(o.listeners) != len(want) {
		t.Fatalf("%+v", o)
	}
	for i := range want {
		if o.listeners[i] != want[i] {
			t.Errorf("listener %d: %+v, want %+v", i, o.listeners[i], want[i])
		}
	}
	// A lane on 127.0.0.2 is held by what listens there or everywhere,
	// not by a process on another loopback address.
	var pids []int
	for _, h := range o.holders(Lane{Host: "127.0.0.2", Port: 8081}) {
		pids = append(pids, h.pid)
	}
	if len(pids) != 3 || pids[0] != 0 || pids[1] != 9 || pids[2] != 10 {
		t.Errorf("holders %v", pids)
	}
	for _, bad := range []string{"listen\tzz\t1\t\n", "listen\t0100007F\tx\t\n", "what\n"} {
		if _, err := parseOwner(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
