package llamastub

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/syncbuf"
)

// stub is a stand-in running in process.
type stub struct {
	t    *testing.T
	url  string
	log  *syncbuf.Buffer
	sig  chan os.Signal
	done chan struct{} // closed when Run has returned
	code int           // Run's exit code, once done
}

// startStub runs the stand-in with args (plus --port 0) and env, and
// waits until it listens.
func startStub(t *testing.T, env map[string]string, args ...string) *stub {
	t.Helper()
	s := &stub{t: t, log: &syncbuf.Buffer{}, sig: make(chan os.Signal, 2), done: make(chan struct{})}
	args = append([]string{"--port", "0"}, args...)
	go func() {
		s.code = Run(args, func(k string) string { return env[k] }, s.log, s.sig)
		close(s.done)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, rest, ok := strings.Cut(s.log.String(), "listening on "); ok {
			s.url = strings.Fields(rest)[0]
			t.Cleanup(func() {
				select {
				case <-s.done:
				default:
					s.sig <- os.Interrupt
					s.sig <- os.Interrupt
					<-s.done
				}
			})
			return s
		}
		select {
		case <-s.done:
			if strings.Contains(s.log.String(), "listening on ") {
				continue
			}
			t.Fatalf("stand-in exited %d:\n%s", s.code, s.log.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatalf("stand-in did not listen:\n%s", s.log.String())
	return nil
}

// client opens a connection per request: the stand-in, as llama-server,
// closes a connection after a streamed answer, and a client reusing it
// could find it closed.
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func (s *stub) get(path string) (int, string) {
	s.t.Helper()
	resp, err := client.Get(s.url + path)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (s *stub) post(path, body string) (int, string) {
	s.t.Helper()
	resp, err := client.Post(s.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitHealthy polls /health until 200.
func (s *stub) waitHealthy() {
	s.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if code, _ := s.get("/health"); code == 200 {
			return
		}
	}
	s.t.Fatalf("never healthy:\n%s", s.log.String())
}

func (s *stub) waitExit(within time.Duration) int {
	s.t.Helper()
	select {
	case <-s.done:
		return s.code
	case <-time.After(within):
		s.t.Fatalf("still running after %v:\n%s", within, s.log.String())
		return -1
	}
}

func modelFile(t *testing.T, name string, size int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := WriteModel(p, size); err != nil {
		t.Fatal(err)
	}
	return p
}

// slow makes loading take about an hour, so a test sees the loading state.
var slow = map[string]string{EnvLoadRate: "1"}

// fastRouter starts and stops a router's models in 10 ms, for tests about
// something else than those times.
var fastRouter = map[string]string{EnvTokenInterval: "20ms", EnvChildStart: "10ms", EnvChildStop: "10ms"}

// The loading state is seen on a stand-in that loads for an hour: one
// that loads in a quarter second could be done before a loaded machine
// sent the requests. Another, loading at 4 MB/s, then turns healthy.
func TestHealthAnswers503WhileLoadingThen200(t *testing.T) {
	path := modelFile(t, "m.gguf", 1<<20)
	s := startStub(t, slow, "-m", path)
	code, body := s.get("/health")
	if code != 503 {
		t.Fatalf("health while loading: %d %s", code, body)
	}
	var e struct {
		Error struct {
			Code    int
			Message string
		}
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != 503 || e.Error.Message != "Loading model" {
		t.Fatalf("loading body %s", body)
	}
	for _, p := range []string{"/v1/models", "/props", "/slots"} {
		if code, _ := s.get(p); code != 503 {
			t.Errorf("%s while loading: %d, want 503", p, code)
		}
	}
	s = startStub(t, map[string]string{EnvLoadRate: fmt.Sprint(4 << 20)}, "-m", path)
	s.waitHealthy()
	if _, body := s.get("/health"); strings.TrimSpace(body) != `{"status":"ok"}` {
		t.Fatalf("healthy body %s", body)
	}
}

func TestLoadTimeIsProportionalToSize(t *testing.T) {
	tu := Tuning{LoadRate: 1 << 30}
	if tu.loadTime(17<<30) != 17*time.Second || tu.loadTime(1<<29) != 500*time.Millisecond {
		t.Fatalf("%v %v", tu.loadTime(17<<30), tu.loadTime(1<<29))
	}
}

func TestEndpointsOfALoadedModel(t *testing.T) {
	path := modelFile(t, "m.gguf", 64)
	s := startStub(t, nil, "-m", path, "--alias", "qwen,chat", "--metrics", "--slots", "-np", "3")
	s.waitHealthy()
	var models struct {
		Data []struct {
			ID      string
			Aliases []string
		}
	}
	_, body := s.get("/v1/models")
	json.Unmarshal([]byte(body), &models)
	if len(models.Data) != 1 || !reflect.DeepEqual(models.Data[0].Aliases, []string{"chat", "qwen"}) {
		t.Fatalf("/v1/models %s", body)
	}
	var props struct {
		ModelPath  string `json:"model_path"`
		TotalSlots int    `json:"total_slots"`
		BuildInfo  string `json:"build_info"`
	}
	_, body = s.get("/props")
	json.Unmarshal([]byte(body), &props)
	if props.ModelPath != path || props.TotalSlots != 3 || props.BuildInfo == "" {
		t.Fatalf("/props %s", body)
	}
	var slots []struct {
		ID           int  `json:"id"`
		IsProcessing bool `json:"is_processing"`
	}
	_, body = s.get("/slots")
	json.Unmarshal([]byte(body), &slots)
	if len(slots) != 3 || slots[2].ID != 2 || slots[0].IsProcessing {
		t.Fatalf("/slots %s", body)
	}
	_, body = s.get("/metrics")
	if !strings.Contains(body, "\nllamacpp:requests_processing 0\n") || !strings.Contains(body, "\nllamacpp:requests_deferred 0\n") {
		t.Fatalf("/metrics %s", body)
	}
}

func TestMetricsNeedTheFlag(t *testing.T) {
	s := startStub(t, nil, "-m", modelFile(t, "m.gguf", 64))
	s.waitHealthy()
	if code, body := s.get("/metrics"); code != 501 || !strings.Contains(body, "--metrics") {
		t.Fatalf("%d %s", code, body)
	}
}

// openStream starts a streaming chat request for tokens tokens (ignoring
// the end of sequence, as llama-server lets a request do) and returns its
// reader once the first event has arrived.
func openStream(t *testing.T, url, model string, tokens int) (*bufio.Reader, io.Closer) {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"stream":true,"max_tokens":%d,"ignore_eos":true,"messages":[{"role":"user","content":"hi"}]}`, model, tokens)
	resp, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("chat: %d %s", resp.StatusCode, b)
	}
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: {") {
		t.Fatalf("first event %q %v", line, err)
	}
	return r, resp.Body
}

// readRest reads events to the end and reports whether the stream ended
// with a final event (finish_reason "length" or "stop") and [DONE].
func readRest(r *bufio.Reader) (complete bool, events int) {
	var last, final string
	for {
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, "data: ") {
			events++
			if strings.Contains(line, `"finish_reason":"stop"`) || strings.Contains(line, `"finish_reason":"length"`) {
				final = line
			}
			last = line
		}
		if err != nil {
			return final != "" && strings.TrimSpace(last) == "data: [DONE]", events
		}
	}
}

func TestStreamEndsWithFinalEventAndDone(t *testing.T) {
	s := startStub(t, map[string]string{EnvTokenInterval: "1ms"}, "-m", modelFile(t, "m.gguf", 64), "--alias", "chat", "--metrics")
	s.waitHealthy()
	r, c := openStream(t, s.url, "chat", 5)
	defer c.Close()
	complete, events := readRest(r)
	if !complete || events != 4+1+1 {
		t.Fatalf("complete %v after %d more events", complete, events)
	}
	if _, body := s.get("/metrics"); !strings.Contains(body, "llamacpp:tokens_predicted_total 5\n") {
		t.Fatalf("metrics %s", body)
	}
}

func TestBusySlotsDeferRequests(t *testing.T) {
	s := startStub(t, map[string]string{EnvTokenInterval: "50ms"}, "-m", modelFile(t, "m.gguf", 64), "-np", "1", "--metrics")
	s.waitHealthy()
	_, c := openStream(t, s.url, "", 1000)
	defer c.Close()
	go client.Post(s.url+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true,"max_tokens":1}`))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		_, body := s.get("/metrics")
		if strings.Contains(body, "llamacpp:requests_processing 1\n") && strings.Contains(body, "llamacpp:requests_deferred 1\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics never showed 1 processing and 1 deferred:\n%s", body)
		}
	}
	_, body := s.get("/slots")
	if !strings.Contains(body, `"is_processing":true`) {
		t.Fatalf("/slots %s", body)
	}
}

func TestSigtermBeforeLoadExitsAtOnce(t *testing.T) {
	s := startStub(t, slow, "-m", modelFile(t, "m.gguf", 1<<20))
	if code, _ := s.get("/health"); code != 503 {
		t.Fatal("not loading")
	}
	s.sig <- os.Interrupt
	if code := s.waitExit(30 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func TestSigtermCutsStreamsRefusesConnectionsAndLingers(t *testing.T) {
	s := startStub(t, map[string]string{EnvTokenInterval: "10ms", EnvLinger: "1h"}, "-m", modelFile(t, "m.gguf", 64), "--alias", "chat")
	s.waitHealthy()
	// An idle keep-alive connection keeps the process lingering.
	idle, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	r, c := openStream(t, s.url, "chat", 100000)
	defer c.Close()
	s.sig <- os.Interrupt
	if complete, _ := readRest(r); complete {
		t.Fatal("the in-flight stream got its final event; llama-server cuts it")
	}
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(s.url, "http://"), time.Second); err == nil {
		t.Fatal("a stopping server accepted a connection")
	}
	select {
	case <-s.done:
		t.Fatalf("exited %d while a connection was open; llama-server lingers", s.code)
	case <-time.After(100 * time.Millisecond):
	}
	s.sig <- os.Interrupt
	if code := s.waitExit(30 * time.Second); code != 1 {
		t.Fatalf("second signal: exit %d, want 1", code)
	}
}

// llama-server's process outlives its SIGTERM with no connection open;
// the stand-in's for the linger time.
func TestSigtermLeavesTheProcessAliveForTheLinger(t *testing.T) {
	s := startStub(t, nil, "-m", modelFile(t, "m.gguf", 64))
	s.waitHealthy()
	s.sig <- os.Interrupt
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := net.DialTimeout("tcp", strings.TrimPrefix(s.url, "http://"), time.Second); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the port still open after SIGTERM")
		}
	}
	select {
	case <-s.done:
		t.Fatalf("exited %d right after SIGTERM with no connection open; llama-server stays until SIGKILL", s.code)
	case <-time.After(300 * time.Millisecond):
	}
	s = startStub(t, map[string]string{EnvLinger: "200ms"}, "-m", modelFile(t, "m.gguf", 64))
	s.waitHealthy()
	s.sig <- os.Interrupt
	if code := s.waitExit(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after the linger", code)
	}
}

func TestBadWeightsFailTheLoadAndExit1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.gguf")
	os.WriteFile(path, []byte("not a gguf file"), 0o644)
	s := startStub(t, nil, "-m", path)
	if code := s.waitExit(30 * time.Second); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(s.log.String(), "failed to load model") {
		t.Fatalf("log:\n%s", s.log.String())
	}
}

// routerStatus returns GET /models as name → status.
func (s *stub) routerStatus() map[string]string {
	_, body := s.get("/models")
	var ms struct {
		Data []struct {
			ID     string
			Status struct{ Value string }
		}
	}
	if err := json.Unmarshal([]byte(body), &ms); err != nil {
		s.t.Fatal(err, body)
	}
	out := map[string]string{}
	for _, m := range ms.Data {
		out[m.ID] = m.Status.Value
	}
	return out
}

func (s *stub) waitStatus(want map[string]string) {
	s.t.Helper()
	var got map[string]string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if got = s.routerStatus(); reflect.DeepEqual(got, want) {
			return
		}
	}
	s.t.Fatalf("models %v, want %v", got, want)
}

func writePreset(t *testing.T, text string) string {
	p := filepath.Join(t.TempDir(), "preset.ini")
	os.WriteFile(p, []byte(text), 0o644)
	return p
}

func TestRouterLoadsOnDemandAndEvictsTheLeastRecentlyUsedIdleModel(t *testing.T) {
	a, b, c := modelFile(t, "a.gguf", 64), modelFile(t, "b.gguf", 64), modelFile(t, "c.gguf", 64)
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	os.WriteFile(bad, []byte("nope"), 0o644)
	preset := writePreset(t, fmt.Sprintf("[*]\nparallel = 1\n[a]\nmodel = %s\nload-on-startup = true\n[b]\nmodel = %s\nalias = bee\n[c]\nmodel = %s\n[bad]\nmodel = %s\n", a, b, c, bad))
	s := startStub(t, fastRouter, "--models-preset", preset, "--models-max", "2", "--metrics")
	s.waitStatus(map[string]string{"a": StateLoaded, "b": StateUnloaded, "c": StateUnloaded, "bad": StateUnloaded})

	// b loads on its first request, by alias.
	if code, body := s.post("/v1/chat/completions", `{"model":"bee","max_tokens":1}`); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	s.waitStatus(map[string]string{"a": StateLoaded, "b": StateLoaded, "c": StateUnloaded, "bad": StateUnloaded})

	// a is older but busy; c evicts b, the least recently used idle one.
	_, closer := openStream(t, s.url, "a", 100000)
	if code, body := s.post("/v1/chat/completions", `{"model":"c","max_tokens":1}`); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	s.waitStatus(map[string]string{"a": StateLoaded, "b": StateUnloaded, "c": StateLoaded, "bad": StateUnloaded})

	// With a and c both busy nothing can be evicted: a request for b waits
	// in a queue (llama-server's router answers nothing for 20 s and
	// more), and is served once a model turns idle.
	_, closer2 := openStream(t, s.url, "c", 100000)
	answered := make(chan string, 1)
	go func() {
		code, body := s.post("/v1/chat/completions", `{"model":"bee","max_tokens":1}`)
		answered <- fmt.Sprint(code, " ", body)
	}()
	for i := 0; i < 20; i++ {
		select {
		case a := <-answered:
			t.Fatalf("a request for b with every loaded model busy was answered: %s", a)
		case <-time.After(25 * time.Millisecond):
		}
		if st := s.routerStatus(); st["b"] != StateUnloaded {
			t.Fatalf("b %s while every loaded model is busy", st["b"])
		}
	}
	closer.Close()
	if a := <-answered; !strings.HasPrefix(a, "200 ") {
		t.Fatalf("the queued request, once a turned idle: %s", a)
	}
	s.waitStatus(map[string]string{"a": StateUnloaded, "b": StateLoaded, "c": StateLoaded, "bad": StateUnloaded})
	closer2.Close()

	if code, _ := s.post("/models/unload", `{"model":"b"}`); code != 200 {
		t.Fatal("unload")
	}
	if code, _ := s.post("/models/load", `{"model":"bad"}`); code != 200 {
		t.Fatal("load")
	}
	s.waitStatus(map[string]string{"a": StateUnloaded, "b": StateUnloaded, "c": StateLoaded, "bad": StateFailed})
	if code, body := s.post("/v1/chat/completions", `{"model":"nope"}`); code != 400 {
		t.Fatalf("unknown model: %d %s", code, body)
	}
}

func TestRouterWithoutAutoloadRefusesUnloadedModels(t *testing.T) {
	preset := writePreset(t, fmt.Sprintf("[a]\nmodel = %s\n", modelFile(t, "a.gguf", 64)))
	s := startStub(t, nil, "--models-preset", preset, "--no-models-autoload")
	if code, body := s.post("/v1/chat/completions", `{"model":"a"}`); code != 400 || !strings.Contains(body, "not loaded") {
		t.Fatalf("%d %s", code, body)
	}
	s.post("/models/load", `{"model":"a"}`)
	s.waitStatus(map[string]string{"a": StateLoaded})
	if code, body := s.post("/v1/chat/completions", `{"model":"a","max_tokens":1}`); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
}

func TestRouterPutsIdleModelsToSleep(t *testing.T) {
	preset := writePreset(t, fmt.Sprintf("[a]\nmodel = %s\nload-on-startup = true\n", modelFile(t, "a.gguf", 64)))
	s := startStub(t, nil, "--models-preset", preset, "--sleep-idle-seconds", "1")
	// Only a loaded model goes to sleep; a wait for "loaded" first could
	// come after the idle second on a loaded machine and miss it.
	s.waitStatus(map[string]string{"a": StateSleeping})
	if code, body := s.post("/v1/chat/completions", `{"model":"a","max_tokens":1}`); code != 200 {
		t.Fatalf("a sleeping model wakes on a request: %d %s", code, body)
	}
}
