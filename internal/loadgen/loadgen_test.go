package loadgen

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fakeLane streams n tokens, then the final event and [DONE] unless cut.
func fakeLane(cut bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 3; i++ {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"w \"},\"finish_reason\":null}]}\n\n")
		}
		if cut {
			panic(http.ErrAbortHandler)
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}
}

func TestChatTellsAWholeStreamFromACutOne(t *testing.T) {
	whole := httptest.NewServer(fakeLane(false))
	defer whole.Close()
	cut := httptest.NewServer(fakeLane(true))
	defer cut.Close()
	if err := Chat(t.Context(), http.DefaultClient, whole.URL, "m", 3); err != nil {
		t.Errorf("whole stream: %v", err)
	}
	if err := Chat(t.Context(), http.DefaultClient, whole.URL, "m", 4); err == nil || !strings.Contains(err.Error(), "3 of 4 tokens") {
		t.Errorf("short stream: %v", err)
	}
	if err := Chat(t.Context(), http.DefaultClient, cut.URL, "m", 3); err == nil {
		t.Error("a cut stream passed")
	}
}

func TestLoadCountsEveryRequestItStarted(t *testing.T) {
	srv := httptest.NewServer(fakeLane(false))
	defer srv.Close()
	l := Start(srv.URL, "m", 4, 3)
	if !l.WaitServed(20, 10*time.Second) {
		t.Fatal("no traffic")
	}
	res := l.Stop()
	if res.Failed != 0 || res.Served < 20 {
		t.Errorf("%+v", res)
	}
	bad := httptest.NewServer(fakeLane(true))
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
