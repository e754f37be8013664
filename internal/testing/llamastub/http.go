package llamastub

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// buildInfo is what /props reports as build_info.
const buildInfo = "b0-llamastub"

// maxBody bounds request bodies the stand-in reads.
const maxBody = 1 << 20

// words are the tokens the stand-in streams, in turn.
var words = strings.Fields("the quick brown fox jumps over the lazy dog and")

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// writeError writes llama-server's error shape.
func writeError(w http.ResponseWriter, code int, kind, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"code": code, "message": msg, "type": kind}})
}

func writeLoading(w http.ResponseWriter) {
	writeError(w, http.StatusServiceUnavailable, "unavailable_error", "Loading model")
}

// handler routes requests to the single model or the router.
func (s *Server) handler() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) {
		if s.single != nil {
			s.serveModel(w, r, s.single)
		} else {
			s.serveRouter(w, r)
		}
	})
}

// handle wraps serve with what every answer of llama-server shares: the
// Keep-Alive header (cpp-httplib's), and 503 once the server is stopping.
func (s *Server) handle(serve http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Keep-Alive", keepAlive)
		if s.stopping() {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusServiceUnavailable, "unavailable_error", "Server is shutting down")
			return
		}
		serve(w, r)
	})
}

// serveModel answers for one model: a single-model server's, or a router
// model's own server.
func (s *Server) serveModel(w http.ResponseWriter, r *http.Request, m *model) {
	snap := m.snapshot()
	if snap.state != StateLoaded {
		writeLoading(w)
		return
	}
	switch r.URL.Path {
	case "/health", "/v1/health":
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	case "/v1/models", "/models":
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{s.modelEntry(m, snap, false)}})
	case "/props":
		writeJSON(w, http.StatusOK, s.props(m))
	case "/slots":
		s.serveSlots(w, m, snap)
	case "/metrics":
		s.serveMetrics(w, []snapshot{snap})
	case "/v1/chat/completions", "/chat/completions":
		s.serveChat(w, r, func(string) (*model, int, string) { return m, 0, "" })
	default:
		writeError(w, http.StatusNotFound, "not_found_error", "File Not Found")
	}
}

func (s *Server) serveRouter(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health", "/v1/health":
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	case "/v1/models", "/models":
		if r.URL.Query().Get("reload") != "" {
			if err := s.reload(r.Context()); err != nil {
				writeError(w, http.StatusInternalServerError, "server_error", err.Error())
				return
			}
		}
		data := []any{}
		for _, m := range s.list() {
			data = append(data, s.modelEntry(m, m.snapshot(), true))
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
	case "/models/load", "/models/unload":
		s.serveLoadUnload(w, r)
	case "/props":
		m := s.find(r.URL.Query().Get("model"))
		if m == nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "router mode: pass ?model=NAME of a model in the preset")
			return
		}
		snap := m.snapshot()
		if snap.state != StateLoaded {
			writeLoading(w)
			return
		}
		writeJSON(w, http.StatusOK, s.props(m))
	case "/slots", "/metrics":
		m, snap, ok := s.modelFor(w, r)
		if !ok {
			return
		}
		if r.URL.Path == "/slots" {
			s.serveSlots(w, m, snap)
		} else {
			s.serveMetrics(w, []snapshot{snap})
		}
	case "/v1/chat/completions", "/chat/completions":
		s.serveChat(w, r, func(name string) (*model, int, string) { return s.routeModel(r.Context(), name) })
	default:
		writeError(w, http.StatusNotFound, "not_found_error", "File Not Found")
	}
}

// presetOnly are the preset keys that are no llama-server argument, or
// that a router model's entry reports apart (model, alias).
var presetOnly = map[string]bool{"model": true, "m": true, "alias": true, "a": true, "load-on-startup": true}

// sectionArgs are a router model's preset section as llama-server's
// router passes it to the model's process: each key as a long flag, in
// key order, followed by its value, a "true" flag alone, a "false" one
// left out. (The real router writes each option's last, long, name; the
// stand-in has no table of llama-server's options and keeps the key.)
func sectionArgs(settings map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		v := settings[k]
		switch {
		case presetOnly[k] || v == "false":
		case v == "true":
			out = append(out, "--"+k)
		default:
			out = append(out, "--"+k, v)
		}
	}
	return out
}

// modelEntry is a model's entry in /v1/models or, for a router, in
// GET /models: as llama-server's router does, the router's entry names
// the model file only in the arguments it starts the model's process with
// (status.args, with --model; --port while it runs), and a model whose
// process failed has its exit code.
func (s *Server) modelEntry(m *model, snap snapshot, router bool) map[string]any {
	e := map[string]any{"id": m.name, "object": "model", "owned_by": "llamacpp", "created": s.started.Unix(),
		"aliases": append([]string{}, m.aliases...)}
	if router {
		args := []string{"llama-server", "--host", "127.0.0.1"}
		if snap.childPort != 0 {
			args = append(args, "--port", strconv.Itoa(snap.childPort))
		}
		args = append(args, "--alias", m.name, "--model", m.path)
		st := map[string]any{"value": snap.state, "args": append(args, sectionArgs(m.settings)...)}
		if snap.failure != "" {
			st["failed"] = true
			st["exit_code"] = 1
		}
		e["status"] = st
	}
	return e
}

func (s *Server) props(m *model) map[string]any {
	return map[string]any{
		"model_path":  m.path,
		"total_slots": m.slots,
		"build_info":  buildInfo,
		"model_alias": strings.Join(m.aliases, ","),
		"default_generation_settings": map[string]any{
			"n_ctx": s.opts.CtxSize, "params": map[string]any{"n_predict": -1},
		},
		"modalities": map[string]bool{"vision": false, "audio": false},
	}
}

func (s *Server) serveSlots(w http.ResponseWriter, m *model, snap snapshot) {
	if !s.opts.Slots {
		writeError(w, http.StatusNotImplemented, "not_supported_error", "This server does not support slots endpoint. Start it with `--slots`")
		return
	}
	out := make([]any, 0, len(snap.busy))
	for id, busy := range snap.busy {
		out = append(out, map[string]any{"id": id, "id_task": -1, "n_ctx": s.opts.CtxSize, "is_processing": busy})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) serveMetrics(w http.ResponseWriter, snaps []snapshot) {
	if !s.opts.Metrics {
		writeError(w, http.StatusNotImplemented, "not_supported_error", "This server does not support metrics endpoint. Start it with `--metrics`")
		return
	}
	var processing, deferred int
	var prompt, predicted int64
	for _, sn := range snaps {
		processing += sn.processing
		deferred += sn.deferred
		prompt += sn.prompt
		predicted += sn.predicted
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	for _, m := range []struct {
		name, kind, help string
		value            int64
	}{
		{"prompt_tokens_total", "counter", "Number of prompt tokens processed.", prompt},
		{"tokens_predicted_total", "counter", "Number of generation tokens processed.", predicted},
		{"requests_processing", "gauge", "Number of requests processing.", int64(processing)},
		{"requests_deferred", "gauge", "Number of requests deferred.", int64(deferred)},
	} {
		fmt.Fprintf(w, "# HELP llamacpp:%s %s\n# TYPE llamacpp:%s %s\nllamacpp:%s %d\n", m.name, m.help, m.name, m.kind, m.name, m.value)
	}
}

// chatRequest is the part of an OpenAI chat request the stand-in reads.
type chatRequest struct {
	Model     string `json:"model"`
	Stream    bool   `json:"stream"`
	MaxTokens int    `json:"max_tokens"`
	IgnoreEOS bool   `json:"ignore_eos"`
	Messages  []struct {
		Content any `json:"content"`
	} `json:"messages"`
}

// keepAlive is the Keep-Alive header llama-server sends on every answer,
// also on a streamed one after which it closes the connection.
const keepAlive = "timeout=5, max=100"

// maxReply bounds a reply that asks for no max_tokens and ignores the end
// of sequence (llama-server's bound is the context).
const maxReply = 4096

// serveChat answers a chat completion on the model pick chooses; pick
// returns an HTTP code and message instead when it cannot serve.
func (s *Server) serveChat(w http.ResponseWriter, r *http.Request, pick func(string) (*model, int, string)) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use POST")
		return
	}
	var req chatRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error())
		return
	}
	m, code, msg := pick(req.Model)
	if m == nil {
		writeError(w, code, "invalid_request_error", msg)
		return
	}
	slot, cut, err := m.acquire(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable_error", err.Error())
		return
	}
	prompt := 1
	for _, msg := range req.Messages {
		if t, ok := msg.Content.(string); ok {
			prompt += len(t) / 4
		}
	}
	n, finish := req.MaxTokens, "length"
	if n <= 0 {
		n = maxReply
	}
	if eos := 1 + rand.Int64N(2*s.tune.ReplyTokens); !req.IgnoreEOS && eos < int64(n) {
		n, finish = int(eos), "stop"
	}
	served := 0
	defer func() { m.release(slot, prompt, served) }()
	name := req.Model
	if name == "" {
		name = m.name
	}
	id := fmt.Sprintf("chatcmpl-%d", time.Now().UnixNano())
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": name,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	flusher, _ := w.(http.Flusher)
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		s.closeAfter(r)
	}
	var text strings.Builder
	for served < n {
		select {
		case <-time.After(s.tune.TokenInterval):
		case <-cut:
			// llama-server stops its queue: the stream ends with no final event.
			panic(http.ErrAbortHandler)
		case <-r.Context().Done():
			return
		}
		word := words[served%len(words)] + " "
		served++
		text.WriteString(word)
		if req.Stream {
			b, _ := json.Marshal(chunk(map[string]any{"content": word}, nil))
			fmt.Fprintf(w, "data: %s\n\n", b)
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
	usage := map[string]int{"prompt_tokens": prompt, "completion_tokens": served, "total_tokens": prompt + served}
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": name,
			"choices": []any{map[string]any{"index": 0, "finish_reason": finish,
				"message": map[string]string{"role": "assistant", "content": text.String()}}},
			"usage": usage})
		return
	}
	final := chunk(map[string]any{}, finish)
	final["usage"] = usage
	b, _ := json.Marshal(final)
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
	if flusher != nil {
		flusher.Flush()
	}
}

// serveLoadUnload answers POST /models/load and /models/unload as
// llama-server's router does: a model it does not know is 404 to a load
// and 400 to an unload, a load of a running model and an unload of one
// not running are 400.
func (s *Server) serveLoadUnload(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use POST")
		return
	}
	var req struct {
		Model string `json:"model"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error())
		return
	}
	m := s.find(req.Model)
	unload := r.URL.Path == "/models/unload"
	switch {
	case m == nil && unload:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "model is not found")
		return
	case m == nil:
		writeError(w, http.StatusNotFound, "not_found_error", "model is not found")
		return
	case unload && !running(m.snapshot().state):
		writeError(w, http.StatusBadRequest, "invalid_request_error", "model is not running")
		return
	case !unload && running(m.snapshot().state):
		writeError(w, http.StatusBadRequest, "invalid_request_error", "model is already running")
		return
	}
	if unload {
		m.stop()
	} else if err := s.admit(r.Context(), m); err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable_error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"success": true})
}

// modelFor is the model a router's /slots or /metrics request names, as
// llama-server's router answers it: 400 "model name is missing" without
// ?model=; for a model loading, the answer once it has loaded; for a
// model not loaded, with autoload (the router's
// --models-autoload, not turned off by autoload=false in the query) the
// router loads it and answers once it is loaded, else 400 "model is not
// loaded" and nothing loads. It writes the error answer itself.
func (s *Server) modelFor(w http.ResponseWriter, r *http.Request) (*model, snapshot, bool) {
	name := r.URL.Query().Get("model")
	if name == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "model name is missing")
		return nil, snapshot{}, false
	}
	m := s.find(name)
	if m == nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "model not found")
		return nil, snapshot{}, false
	}
	snap := m.snapshot()
	if snap.state == StateLoaded {
		return m, snap, true
	}
	if snap.state != StateLoading && (!s.opts.Autoload || r.URL.Query().Get("autoload") == "false") {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "model is not loaded")
		return nil, snapshot{}, false
	}
	if err := s.admit(r.Context(), m); err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable_error", err.Error())
		return nil, snapshot{}, false
	}
	if snap = m.waitLoaded(); snap.state != StateLoaded {
		writeError(w, http.StatusServiceUnavailable, "unavailable_error", fmt.Sprintf("model %q %s: %s", name, snap.state, snap.failure))
		return nil, snapshot{}, false
	}
	return m, snap, true
}

// find returns the preset model named or aliased n, or nil.
func (s *Server) find(n string) *model {
	for _, m := range s.list() {
		if m.answers(n) {
			return m
		}
	}
	return nil
}

// routeModel picks the router's model for a chat request, loading it on
// demand when autoload is on, and waits until it has loaded.
func (s *Server) routeModel(ctx context.Context, name string) (*model, int, string) {
	m := s.find(name)
	if m == nil {
		return nil, http.StatusBadRequest, fmt.Sprintf("model %q not found", name)
	}
	snap := m.snapshot()
	if snap.state != StateLoaded && snap.state != StateLoading && snap.state != StateSleeping && !s.opts.Autoload {
		return nil, http.StatusBadRequest, fmt.Sprintf("model %q is not loaded (autoload is off)", name)
	}
	if err := s.admit(ctx, m); err != nil {
		return nil, http.StatusServiceUnavailable, err.Error()
	}
	if snap = m.waitLoaded(); snap.state != StateLoaded {
		return nil, http.StatusServiceUnavailable, fmt.Sprintf("model %q %s: %s", name, snap.state, snap.failure)
	}
	return m, 0, ""
}

// waitLoaded waits for the model's load to end and returns its state.
func (m *model) waitLoaded() snapshot {
	m.mu.Lock()
	done := m.done
	m.mu.Unlock()
	if done != nil {
		<-done
	}
	return m.snapshot()
}

// admitPoll is how often a load waiting for room at --models-max looks
// again.
const admitPoll = 20 * time.Millisecond

// admit starts loading m, first stopping the least recently used idle
// models while --models-max would be passed, and waits for them to exit.
// Busy models are never evicted: while every loaded model is busy the
// load waits in a queue, as llama-server's router does, until one turns
// idle or ctx ends. Eviction counts models, not memory.
func (s *Server) admit(ctx context.Context, m *model) error {
	for {
		admitted, err := s.tryAdmit(m)
		if admitted || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for room to load %q: %w", m.name, ctx.Err())
		case <-time.After(admitPoll):
		}
	}
}

// tryAdmit starts loading m if it is not running and there is room, or
// stops the least recently used idle model to make room; it reports
// whether m is loading or loaded.
func (s *Server) tryAdmit(m *model) (bool, error) {
	s.routerMu.Lock()
	defer s.routerMu.Unlock()
	if sn := m.snapshot(); sn.stopping {
		return false, nil
	} else if sn.state == StateLoaded || sn.state == StateLoading {
		return true, nil
	}
	if !slices.Contains(s.models, m) {
		return false, fmt.Errorf("model %q was reloaded from the preset meanwhile", m.name)
	}
	for _, o := range s.exiting {
		if o.name == m.name && o.snapshot().stopping {
			return false, nil // the process of its old section is still exiting
		}
	}
	if s.opts.ModelsMax > 0 {
		var resident []*model
		var snaps []snapshot
		for _, o := range append(slices.Clip(s.models), s.exiting...) {
			if sn := o.snapshot(); sn.state == StateLoaded || sn.state == StateLoading {
				resident = append(resident, o)
				snaps = append(snaps, sn)
			}
		}
		if len(resident) >= s.opts.ModelsMax {
			if slices.ContainsFunc(snaps, func(sn snapshot) bool { return sn.stopping }) {
				return false, nil // room is being made
			}
			idx := make([]int, len(resident))
			for i := range idx {
				idx[i] = i
			}
			sort.Slice(idx, func(a, b int) bool { return snaps[idx[a]].lastUsed.Before(snaps[idx[b]].lastUsed) })
			for _, i := range idx {
				if snaps[i].state == StateLoaded && snaps[i].idle() {
					resident[i].stop()
					break
				}
			}
			return false, nil
		}
	}
	return true, s.spawn(m)
}

// spawn starts a router model's process: its own server on 127.0.0.1 at
// a port the router picks (the kernel's free one), answering 503 while the
// weights load.
func (s *Server) spawn(m *model) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("starting the process of %q: %v", m.name, err)
	}
	srv := &http.Server{Handler: s.handle(func(w http.ResponseWriter, r *http.Request) { s.serveModel(w, r, m) }),
		ConnContext: s.connContext, ConnState: s.trackConn, IdleTimeout: idleTimeout}
	go srv.Serve(ln)
	m.mu.Lock()
	m.child, m.childPort = srv, ln.Addr().(*net.TCPAddr).Port
	m.mu.Unlock()
	m.startLoad()
	return nil
}

// sleepIdle puts loaded models idle for longer than d to sleep.
func (s *Server) sleepIdle(d time.Duration) {
	for _, m := range s.list() {
		if sn := m.snapshot(); sn.state == StateLoaded && sn.idle() && time.Since(sn.lastUsed) > d {
			m.unload(StateSleeping)
		}
	}
}

// nameFor is a model's name in single mode: its first alias, else the
// file name of its path.
func nameFor(o Options) string {
	if len(o.Aliases) > 0 {
		return o.Aliases[0]
	}
	return filepath.Base(o.Model)
}
