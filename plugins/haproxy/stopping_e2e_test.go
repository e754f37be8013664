//go:build e2e

package haproxy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestE2EAReloadSendsNoRequestToAFallback reloads HAProxy through its
// master CLI, again and again, while keep-alive clients send requests
// for alias chat, whose lane answers its health checks throughout: every
// request is answered by chat's lane, none by its fallback. (The old
// worker, once stopping, counts no usable server in any backend, so
// without the configuration's !{ stopping } a request it still takes on
// a kept connection went to the fallback, which, served by a router that
// does not know the alias, answered 400 "model not found": the fleet
// walk's seeds 4 and 6.)
func TestE2EAReloadSendsNoRequestToAFallback(t *testing.T) {
	const reloads = 20
	lane := func(name string) (string, int) {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			if r.URL.Path != "/health" {
				time.Sleep(50 * time.Millisecond)
			}
			io.WriteString(w, name)
		}))
		t.Cleanup(s.Close)
		host, port, _ := net.SplitHostPort(s.Listener.Addr().String())
		p, _ := strconv.Atoi(port)
		return host, p
	}
	ah, ap := lane("cognition")
	bh, bp := lane("scribe")
	spec := testSpec(t, []LaneBackend{{Lane: "cognition", Addr: ah, Port: ap}, {Lane: "scribe", Addr: bh, Port: bp}},
		[]AliasRoute{{Alias: "chat", Lane: "cognition", Fallbacks: []string{"scribe"}}, {Alias: "notes", Lane: "scribe"}})
	p := startMasterProxy(t, spec)
	var (
		mu       sync.Mutex
		answered = map[string]int{}
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	body := []byte(`{"model":"chat"}`)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 30 * time.Second} // keeps its connections alive
			for {
				select {
				case <-stop:
					return
				default:
				}
				// The body follows the headers a moment later, as a
				// client's second write does: HAProxy buffers it before
				// choosing the backend, which a reload can straddle.
				req, _ := http.NewRequest(http.MethodPost, p.base()+"/v1/chat/completions", nil)
				req.Header.Set("Content-Type", "application/json")
				req.Body, req.ContentLength = io.NopCloser(&lateBody{r: bytes.NewReader(body)}), int64(len(body))
				req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
				resp, err := c.Do(req)
				what := ""
				if err != nil {
					what = "error: " + err.Error()
				} else {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					what = fmt.Sprintf("%d %s", resp.StatusCode, b)
				}
				mu.Lock()
				answered[what]++
				mu.Unlock()
			}
		}()
	}
	master := Runtime{Dial: localDialer(p.master)}
	admin := Runtime{Dial: p.localDialer()}
	pid := func() string {
		out, _ := admin.Exec(t.Context(), "show", "info")
		for _, line := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(line, "Pid: "); ok {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	for i := 0; i < reloads; i++ {
		old := pid()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			_, err := master.Exec(t.Context(), "reload")
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("reload %d through the master CLI: %v", i+1, err)
			}
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if now := pid(); now != "" && now != old {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("reload %d: no new worker within 30s: %s", i+1, p.log.String())
			}
		}
		time.Sleep(time.Second) // requests on the old worker's kept connections
	}
	close(stop)
	wg.Wait()
	t.Logf("%d reloads under keep-alive load: %v", reloads, answered)
	for what, n := range answered {
		if what != "200 cognition" {
			t.Errorf("%d requests for chat answered %q across the reloads; want every one by lane cognition", n, what)
		}
	}
}

// lateBody is a request body that waits a moment before its bytes.
type lateBody struct {
	r      io.Reader
	waited bool
}

func (b *lateBody) Read(p []byte) (int, error) {
	if !b.waited {
		b.waited = true
		time.Sleep(20 * time.Millisecond)
	}
	return b.r.Read(p)
}
