// Package llamastub is a stand-in for llama.cpp's llama-server, for tests
// on machines where no llama.cpp build can be installed. It speaks the
// same HTTP API and keeps the behaviours poolc depends on:
//
//   - /health answers 503 {"error":{"code":503,"message":"Loading model"}}
//     while the model loads, for a time proportional to the file's size
//     (EnvLoadRate), and every other endpoint answers 503 too; then
//     /health answers 200 {"status":"ok"}, also while busy.
//   - /v1/models lists the --alias set (sorted), /props has model_path,
//     total_slots and build_info, /slots lists {id, is_processing},
//     /metrics (only with --metrics) has llamacpp:requests_processing and
//     llamacpp:requests_deferred.
//   - /v1/chat/completions streams server-sent events, one per token,
//     ending with a final event (finish_reason "stop") and "data: [DONE]".
//     A request finding every slot busy waits, counted as deferred.
//   - It does not drain: SIGTERM before the model has loaded exits at
//     once; after, it stops its queue, cuts in-flight streams (no final
//     event), stops accepting connections and lingers while clients keep
//     connections open (EnvLinger, 30s by default); a second signal exits 1.
//   - Router mode (no -m): models come from --models-preset; they load on
//     request (--models-autoload, the default) or with POST /models/load,
//     unload with POST /models/unload, and GET /models reports each as
//     unloaded, loading, loaded, sleeping or failed. At --models-max
//     resident models, loading another evicts the least recently used idle
//     one: by count, not memory, and never a busy one. --models-max 0 is
//     no bound. The preset is read at startup and again on GET
//     /models?reload=1: a running model whose section is gone or changed
//     (its alias aside) is unloaded, cutting its streams; one whose
//     section is the same keeps serving (with the aliases it started
//     with); models not running take their sections as they are now, and
//     new sections add models.
//
// A model file must begin with the GGUF magic; one that does not fails to
// load, and the process exits 1 as llama-server does. Tokens are words
// from a fixed list, not inference.
package llamastub

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// Server is one running stand-in: a single model, or a router of models.
type Server struct {
	opts    Options
	tune    Tuning
	log     io.Writer
	started time.Time

	single   *model   // single-model mode
	models   []*model // router mode, in preset order
	routerMu sync.Mutex

	mu       sync.Mutex
	closing  bool
	conns    map[net.Conn]bool
	connGone chan struct{} // signalled when a connection closes
}

func (s *Server) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Run is llama-server's main: it parses args, serves until signalled and
// returns the exit code. Signals arrive on sig; log receives the server
// log (llama-server writes it to stderr).
func Run(args []string, getenv func(string) string, log io.Writer, sig <-chan os.Signal) int {
	opts, err := ParseArgs(args)
	if err != nil {
		fmt.Fprintln(log, err)
		return 1
	}
	tune, err := TuningFromEnv(getenv)
	if err != nil {
		fmt.Fprintln(log, "error:", err)
		return 1
	}
	s := &Server{opts: opts, tune: tune, log: log, started: time.Now(), conns: map[net.Conn]bool{}, connGone: make(chan struct{}, 1)}
	if opts.Model != "" {
		s.single = newModel(nameFor(opts), opts.Model, opts.Aliases, opts.Parallel, tune, log)
	} else {
		if opts.ModelsPreset == "" {
			fmt.Fprintln(log, "error: no model: pass -m FILE, or --models-preset FILE.ini for router mode")
			return 1
		}
		p, err := s.loadPreset()
		if err != nil {
			fmt.Fprintln(log, "error:", err)
			return 1
		}
		for _, pm := range p.Models {
			s.models = append(s.models, s.presetModel(pm))
		}
		defer func() {
			for _, m := range s.list() {
				m.unload(StateUnloaded)
			}
		}()
		for i, pm := range p.Models {
			if pm.LoadOnStartup {
				if err := s.admit(s.models[i]); err != nil {
					fmt.Fprintln(log, "srv    load-on-startup:", err)
				}
			}
		}
	}

	addr := net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(log, "main: couldn't bind HTTP server socket, hostname: %s, port: %d: %v\n", opts.Host, opts.Port, err)
		return 1
	}
	srv := &http.Server{Handler: s.handler(), ConnState: s.trackConn, ErrorLog: nil}
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Fprintf(log, "main: server is listening on http://%s - starting the main loop\n", ln.Addr())

	var loaded <-chan struct{}
	if s.single != nil {
		loaded = s.single.startLoad()
	}
	var tick <-chan time.Time
	if opts.SleepIdle > 0 && s.single == nil {
		t := time.NewTicker(opts.SleepIdle / 4)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-loaded:
			loaded = nil
			if sn := s.single.snapshot(); sn.state == StateFailed {
				fmt.Fprintln(log, "main: exiting due to model loading error")
				return 1
			}
			fmt.Fprintln(log, "main: model loaded")
		case <-tick:
			s.sleepIdle(opts.SleepIdle)
		case <-sig:
			if s.single != nil && s.single.snapshot().state != StateLoaded {
				fmt.Fprintln(log, "main: signal received before the model loaded, exiting")
				return 0
			}
			return s.terminate(ln, sig)
		}
	}
}

// terminate stops the server the way llama-server does: the queue stops,
// in-flight streams are cut, no connection is accepted, and the process
// lingers while connections stay open, up to the linger time. A second
// signal exits 1 at once.
func (s *Server) terminate(ln net.Listener, sig <-chan os.Signal) int {
	fmt.Fprintln(s.log, "srv    operator(): operator(): cleaning up before exit...")
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	ln.Close()
	if s.single != nil {
		s.single.unload(StateUnloaded)
	}
	for _, m := range s.list() {
		m.unload(StateUnloaded)
	}
	deadline := time.NewTimer(s.tune.Linger)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		open := len(s.conns)
		s.mu.Unlock()
		if open == 0 {
			return 0
		}
		select {
		case <-s.connGone:
		case <-deadline.C:
			return 0
		case <-sig:
			fmt.Fprintln(s.log, "main: received a second interrupt, terminating immediately")
			return 1
		}
	}
}

func (s *Server) trackConn(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateNew:
		s.conns[c] = true
	case http.StateClosed, http.StateHijacked:
		delete(s.conns, c)
		select {
		case s.connGone <- struct{}{}:
		default:
		}
	}
}
