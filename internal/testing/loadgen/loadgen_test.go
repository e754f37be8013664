package loadgen

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fakeLane streams n tokens, then a final event with finish and [DONE]
// unless cut.
func fakeLane(n int, finish string, cut bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < n; i++ {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"w \"},\"finish_reason\":null}]}\n\n")
		}
		if cut {
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":%q}]}\n\ndata: [DONE]\n\n", finish)
	}
}

func TestChatTellsAWholeStreamFromACutOne(t *testing.T) {
	for _, c := range []struct {
		name       string
		lane       http.HandlerFunc
		maxTokens  int
		wantFailed string
	}{
		{"max_tokens reached", fakeLane(3, "length", false), 3, ""},
		{"an earlier end of sequence", fakeLane(2, "stop", false), 3, ""},
		{"more tokens than asked for", fakeLane(4, "length", false), 3, "4 tokens of max 3"},
		{"a cut stream", fakeLane(3, "", true), 3, "truncated"},
		{"no known finish reason", fakeLane(3, "", false), 3, `final event ""`},
	} {
		srv := httptest.NewServer(c.lane)
		err := Chat(t.Context(), http.DefaultClient, srv.URL, "m", c.maxTokens)
		srv.Close()
		if c.wantFailed == "" && err != nil || c.wantFailed != "" && (err == nil || !strings.Contains(err.Error(), c.wantFailed)) {
			t.Errorf("%s: %v, want failure %q", c.name, err, c.wantFailed)
		}
	}
}

func TestLoadCountsEveryRequestItStarted(t *testing.T) {
	srv := httptest.NewServer(fakeLane(3, "length", false))
	defer srv.Close()
	l := Start(srv.URL, "m", 4, 3)
	if !l.WaitServed(20, 10*time.Second) {
		t.Fatal("no traffic")
	}
	res := l.Stop()
	if res.Failed != 0 || res.Served < 20 {
		t.Errorf("%+v", res)
	}
	if res.Connections > 4 {
		t.Errorf("4 workers opened %d connections for %d requests; they keep connections alive", res.Connections, res.Served)
	}
	bad := httptest.NewServer(fakeLane(3, "", true))
	defer bad.Close()
	l = Start(bad.URL, "m", 2, 3)
	// Stop before a worker ran its first request would count nothing:
	// wait for a failure rather than for a fixed while.
	for deadline := time.Now().Add(30 * time.Second); l.Failed() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if res := l.Stop(); res.Failed == 0 || res.Served != 0 || len(res.Errors) == 0 {
		t.Errorf("cut streams: %+v", res)
	}
}

// A lane closing the connection after every stream without saying so in
// its headers, as llama-server does, fails no request: a reused
// connection found closed before any answer is replaced by a fresh one,
// as the OpenAI SDKs do.
func TestLoadSurvivesALaneThatClosesConnectionsAfterStreams(t *testing.T) {
	srv := httptest.NewUnstartedServer(fakeLane(3, "length", false))
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateIdle {
			c.Close()
		}
	}
	srv.Start()
	defer srv.Close()
	l := Start(srv.URL, "m", 4, 3)
	if !l.WaitServed(400, time.Minute) {
		t.Fatalf("no traffic: %+v", l.Stop())
	}
	if res := l.Stop(); res.Failed != 0 {
		t.Fatalf("%d of %d requests failed: %q", res.Failed, res.Failed+res.Served, res.Errors)
	}
}
