package llamastub

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tests in this file each show one behaviour of the real llama-server
// (checked against a build of llama.cpp serving small GGUF models) that
// the stand-in keeps.

// routerModel is a model's entry in a router's GET /models.
type routerModel struct {
	ID     string
	Status struct {
		Value string
		Args  []string
	}
}

func (s *stub) routerModel(name string) routerModel {
	s.t.Helper()
	_, body := s.get("/models")
	var ms struct{ Data []routerModel }
	if err := json.Unmarshal([]byte(body), &ms); err != nil {
		s.t.Fatal(err, body)
	}
	for _, m := range ms.Data {
		if m.ID == name {
			return m
		}
	}
	s.t.Fatalf("no model %s in %s", name, body)
	return routerModel{}
}

// flag is the value after name in args, "" when there is none.
func flag(args []string, name string) string {
	if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err != nil
}

// waitRefused waits until nothing listens on addr.
func waitRefused(t *testing.T, addr, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !refused(addr); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (%s) still listens", what, addr)
		}
	}
}

// A router's model loads for about a second in a process of its own,
// listening on 127.0.0.1 at a port the router picked; GET /models names
// its file with --model and its port with --port. (The loading state is
// seen on a stand-in that starts its models in an hour: a second could
// pass on a loaded machine before the test looked.)
func TestRouterModelLoadsInItsOwnProcessOnAPortTheRouterPicks(t *testing.T) {
	if DefaultTuning.ChildStart != time.Second || DefaultTuning.ChildStop != 2*time.Second {
		t.Fatalf("a router's model starts in %v and stops in %v by default; a real router's take about 1 s and up to 2 s", DefaultTuning.ChildStart, DefaultTuning.ChildStop)
	}
	path := modelFile(t, "a.gguf", 64)
	preset := writePreset(t, "[a]\nmodel = "+path+"\n")
	s := startStub(t, map[string]string{EnvChildStart: "1h"}, "--models-preset", preset)
	if code, body := s.post("/models/load", `{"model":"a"}`); code != 200 {
		t.Fatalf("load: %d %s", code, body)
	}
	m := s.routerModel("a")
	if m.Status.Value != StateLoading {
		t.Fatalf("right after the load: %s, want loading", m.Status.Value)
	}
	if got := flag(m.Status.Args, "--model"); got != path {
		t.Fatalf("status.args %q: --model %q, want %q", m.Status.Args, got, path)
	}
	if slices.Contains(m.Status.Args, "-m") || flag(m.Status.Args, "--host") != "127.0.0.1" {
		t.Fatalf("status.args %q", m.Status.Args)
	}
	port, err := strconv.Atoi(flag(m.Status.Args, "--port"))
	if err != nil || strconv.Itoa(port) == strings.TrimPrefix(s.url, "http://127.0.0.1:") {
		t.Fatalf("status.args %q: no port of the model's own", m.Status.Args)
	}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port))
	if err != nil {
		t.Fatalf("the loading model's own port: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("the loading model's own port: /health %d, want 503", resp.StatusCode)
	}

	s = startStub(t, fastRouter, "--models-preset", preset)
	s.post("/models/load", `{"model":"a"}`)
	s.waitStatus(map[string]string{"a": StateLoaded})
	port, _ = strconv.Atoi(flag(s.routerModel("a").Status.Args, "--port"))
	resp, err = client.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", port), "application/json", strings.NewReader(`{"max_tokens":1}`))
	if err != nil {
		t.Fatalf("the model's own port: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the model's own port: %d", resp.StatusCode)
	}
}

// POST /models/unload answers 200 while the model's process still runs:
// GET /models says loaded for up to about 2 s more (here an hour, so that
// a loaded machine cannot make the test miss it); its streams are cut at
// once.
func TestRouterUnloadAnswersBeforeTheModelHasExited(t *testing.T) {
	preset := writePreset(t, "[a]\nmodel = "+modelFile(t, "a.gguf", 64)+"\nload-on-startup = true\n")
	s := startStub(t, map[string]string{EnvChildStart: "10ms", EnvChildStop: "1h", EnvTokenInterval: "10ms"}, "--models-preset", preset)
	s.waitStatus(map[string]string{"a": StateLoaded})
	port := flag(s.routerModel("a").Status.Args, "--port")
	r, c := openStream(t, s.url, "a", 100000)
	defer c.Close()
	if code, body := s.post("/models/unload", `{"model":"a"}`); code != 200 {
		t.Fatalf("unload: %d %s", code, body)
	}
	if st := s.routerModel("a").Status.Value; st != StateLoaded {
		t.Fatalf("right after the unload answered: %s, want still loaded", st)
	}
	if complete, _ := readRest(r); complete {
		t.Fatal("a stream of the unloaded model went on to its end")
	}
	if refused("127.0.0.1:" + port) {
		t.Fatal("the unloaded model's process closed its port before it exited")
	}
}

// A reload that changes a running model's section answers only once that
// model's process has exited.
func TestReloadOfAChangedModelAnswersOnceItHasExited(t *testing.T) {
	a, b := modelFile(t, "a.gguf", 64), modelFile(t, "b.gguf", 64)
	preset := writePreset(t, fmt.Sprintf("[a]\nmodel = %s\nload-on-startup = true\n", a))
	s := startStub(t, map[string]string{EnvChildStart: "10ms", EnvChildStop: "300ms"}, "--models-preset", preset)
	s.waitStatus(map[string]string{"a": StateLoaded})
	port := flag(s.routerModel("a").Status.Args, "--port")
	if err := os.WriteFile(preset, []byte(fmt.Sprintf("[a]\nmodel = %s\n", b)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := s.get("/models?reload=1"); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	if st := s.routerModel("a").Status.Value; st != StateUnloaded {
		t.Fatalf("right after the reload answered: a %s, want unloaded", st)
	}
	if !refused("127.0.0.1:" + port) {
		t.Fatal("the changed model's process still listens after the reload answered")
	}
}

// A router stops at once on SIGTERM, its models' processes with it, even
// with a connection open.
func TestRouterSigtermExitsAtOnceWithItsModels(t *testing.T) {
	preset := writePreset(t, "[a]\nmodel = "+modelFile(t, "a.gguf", 64)+"\nload-on-startup = true\n")
	s := startStub(t, map[string]string{EnvChildStart: "10ms", EnvLinger: "1h"}, "--models-preset", preset)
	s.waitStatus(map[string]string{"a": StateLoaded})
	port := flag(s.routerModel("a").Status.Args, "--port")
	idle, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	s.sig <- os.Interrupt
	if code := s.waitExit(30 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	waitRefused(t, "127.0.0.1:"+port, "the model's process after its router exited")
}

// chatOn sends a chat request on conn and reads its answer whole.
func chatOn(t *testing.T, conn net.Conn, r *bufio.Reader, stream bool) *http.Response {
	t.Helper()
	body := fmt.Sprintf(`{"stream":%v,"max_tokens":2}`, stream)
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// After a streamed answer llama-server closes the connection, though its
// headers say Keep-Alive; after a non-streamed one it keeps it.
func TestStreamedAnswerClosesTheConnectionItsHeadersKeep(t *testing.T) {
	s := startStub(t, map[string]string{EnvTokenInterval: "1ms"}, "-m", modelFile(t, "m.gguf", 64))
	s.waitHealthy()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	for i := 0; i < 2; i++ {
		if resp := chatOn(t, conn, r, false); resp.StatusCode != 200 || resp.Close {
			t.Fatalf("non-streamed answer %d: %d, close %v", i, resp.StatusCode, resp.Close)
		}
	}
	resp := chatOn(t, conn, r, true)
	if resp.StatusCode != 200 || resp.Close || resp.Header.Get("Keep-Alive") != "timeout=5, max=100" {
		t.Fatalf("streamed answer: %d, close %v, Keep-Alive %q", resp.StatusCode, resp.Close, resp.Header.Get("Keep-Alive"))
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("after a streamed answer the connection gave %q, %v; want EOF", n, err)
	}
}

// A reply ends at max_tokens with finish_reason "length", or earlier with
// "stop" at its end of sequence; "ignore_eos" makes it run to max_tokens.
func TestRepliesEndAtMaxTokensOrEarlierAtTheEndOfSequence(t *testing.T) {
	s := startStub(t, map[string]string{EnvTokenInterval: "0s", EnvReplyTokens: "4"}, "-m", modelFile(t, "m.gguf", 64))
	s.waitHealthy()
	seen := map[string]bool{}
	for i := 0; i < 200 && !(seen["length"] && seen["stop"]); i++ {
		_, body := s.post("/v1/chat/completions", `{"max_tokens":5}`)
		var ans struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(body), &ans); err != nil || len(ans.Choices) != 1 {
			t.Fatalf("%v %s", err, body)
		}
		n, fin := ans.Usage.CompletionTokens, ans.Choices[0].FinishReason
		if fin == "length" && n != 5 || fin == "stop" && (n < 1 || n >= 5) || fin != "length" && fin != "stop" {
			t.Fatalf("finish_reason %q after %d of max_tokens 5", fin, n)
		}
		seen[fin] = true
	}
	if !seen["length"] || !seen["stop"] {
		t.Fatalf("200 replies of mean length 4 to max_tokens 5 ended only %v", seen)
	}
	_, body := s.post("/v1/chat/completions", `{"max_tokens":50,"ignore_eos":true}`)
	if !strings.Contains(body, `"finish_reason":"length"`) || !strings.Contains(body, `"completion_tokens":50`) {
		t.Fatalf("ignore_eos: %s", body)
	}
}
