package llama

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/loadgen"
)

// fakeLane is a lane's HTTP API whose /slots misbehaves (how) while a
// request is in flight, and answers idle once it is done.
type fakeLane struct {
	inFlight atomic.Bool
	probes   atomic.Int64
	release  chan struct{}
}

func (f *fakeLane) serve(how string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slots":
			f.probes.Add(1)
			if f.inFlight.Load() {
				switch how {
				case "sleeps":
					select {
					case <-f.release:
					case <-r.Context().Done():
					}
					return
				case "garbage":
					fmt.Fprint(w, "<html>proxy error</html>")
					return
				}
			}
			fmt.Fprint(w, `[{"id":0,"is_processing":false}]`)
		case "/metrics":
			fmt.Fprint(w, "llamacpp:requests_processing 0\nllamacpp:requests_deferred 0\n")
		default:
			http.NotFound(w, r)
		}
	}
}

// startFakeLane serves f on a loopback port and returns the lane there.
func startFakeLane(t *testing.T, f *fakeLane, how string) Lane {
	srv := httptest.NewServer(f.serve(how))
	t.Cleanup(func() { close(f.release); srv.Close() })
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	var p int
	fmt.Sscan(port, &p)
	return Lane{Name: "flaky", Host: "127.0.0.1", Port: p, Model: "/models/flaky.gguf"}
}

// TestADrainWaitsThroughProbesThatFail: a /slots that sleeps past the
// probe timeout, or answers what does not parse, while a request is in
// flight is busy, unknown: the drain waits (it would have cut the
// request), and ends once the lane answers idle.
func TestADrainWaitsThroughProbesThatFail(t *testing.T) {
	for _, how := range []string{"sleeps", "garbage"} {
		t.Run(how, func(t *testing.T) {
			f := &fakeLane{release: make(chan struct{})}
			f.inFlight.Store(true)
			l := startFakeLane(t, f, how)
			set := testSettings(t)
			set.ProbeTimeout = 100 * time.Millisecond
			n := NewNode(Local{}, set)
			var mu sync.Mutex
			var lines []string
			done := make(chan error, 1)
			go func() {
				done <- n.Drain(context.Background(), l, func(s string) {
					mu.Lock()
					lines = append(lines, s)
					mu.Unlock()
				})
			}()
			for f.probes.Load() < 4 {
				select {
				case err := <-done:
					t.Fatalf("the drain ended with a request in flight after %d probes: %v", f.probes.Load(), err)
				case <-time.After(10 * time.Millisecond):
				}
			}
			f.inFlight.Store(false)
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the drain did not end once the lane was idle")
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(strings.Join(lines, "\n"), "busy, unknown: GET /slots") || !strings.HasSuffix(lines[len(lines)-1], "nothing in flight") {
				t.Errorf("what the drain said: %q", lines)
			}
		})
	}
}

// TestADrainThatTimesOutSaysWhatItSawLast: a lane that never answers
// clearly is not idle: the drain times out naming what it saw.
func TestADrainThatTimesOutSaysWhatItSawLast(t *testing.T) {
	f := &fakeLane{release: make(chan struct{})}
	f.inFlight.Store(true)
	l := startFakeLane(t, f, "garbage")
	set := testSettings(t)
	set.DrainTimeout = 300 * time.Millisecond
	err := NewNode(Local{}, set).Drain(context.Background(), l, nil)
	if dte, ok := err.(*DrainTimeoutError); !ok || !strings.Contains(dte.Last, "busy, unknown: GET /slots") {
		t.Fatalf("got %v", err)
	}
}

// TestARouterRestartDrainsAStreamOnAnotherModel: the router answers
// /slots and /metrics only with ?model= (400 without, as llama-server's
// does); a restart of the router (its --models-max changes) waits for a
// stream in flight on one of its models instead of cutting it.
func TestARouterRestartDrainsAStreamOnAnotherModel(t *testing.T) {
	ctx := context.Background()
	n := NewNode(Local{}, testSettings(t))
	dir := t.TempDir()
	spec := RouterSpec{Host: "127.0.0.1", Port: freePort(t), ModelsMax: 2,
		Models: []RouterModel{testRouterModel(t, dir, "a", "a"), testRouterModel(t, dir, "b", "b")}}
	rl := n.router.routerLane(spec)
	stopAtEnd(t, n, rl)
	if err := n.EnsureRouter(ctx, spec, nil); err != nil {
		t.Fatal(err)
	}
	streamed := make(chan error, 1)
	// ignore_eos: the reply runs its 200 tokens, as a real server's does,
	// rather than ending early at an end of sequence before the restart.
	go func() {
		streamed <- loadgen.Send(ctx, http.DefaultClient, "http://"+rl.probeAddr(), loadgen.Request{Model: "b", MaxTokens: 200, IgnoreEOS: true})
	}()
	busy := n.drain.modelBusy(rl, "b")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := busy(ctx); err == nil && b > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream never started")
		}
	}
	var lines []string
	spec.ModelsMax = 3
	if err := n.EnsureRouter(ctx, spec, func(s string) { lines = append(lines, s) }); err != nil {
		t.Fatal(err)
	}
	if err := <-streamed; err != nil {
		t.Fatalf("the stream on b was cut by the restart: %v (progress %q)", err, lines)
	}
	if !strings.Contains(strings.Join(lines, "\n"), "1 request in flight") {
		t.Errorf("progress %q", lines)
	}
}

// TestADrainOfAnUnloadedRouterModelLeavesItUnloaded: the drain's probe
// asks with autoload=false, so a router with --models-autoload does not
// load the model it drains.
func TestADrainOfAnUnloadedRouterModelLeavesItUnloaded(t *testing.T) {
	ctx := context.Background()
	n := NewNode(Local{}, testSettings(t))
	spec := RouterSpec{Host: "127.0.0.1", Port: freePort(t), Models: []RouterModel{testRouterModel(t, t.TempDir(), "a", "a")}}
	stopAtEnd(t, n, n.router.routerLane(spec))
	if err := n.EnsureRouter(ctx, spec, nil); err != nil {
		t.Fatal(err)
	}
	if err := n.DrainRouterModel(ctx, spec, "a", nil); err != nil {
		t.Fatal(err)
	}
	states, err := n.RouterModels(ctx, spec)
	if err != nil || len(states) != 1 || states[0].State != "unloaded" {
		t.Fatalf("after the drain: %+v %v", states, err)
	}
}
