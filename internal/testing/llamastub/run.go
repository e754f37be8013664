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
//     ending with a final event and "data: [DONE]": finish_reason
//     "length" at max_tokens, or "stop" earlier at the reply's end of
//     sequence (EnvReplyTokens; "ignore_eos": true ignores it). A request
//     finding every slot busy waits, counted as deferred.
//   - Every answer says "Keep-Alive: timeout=5, max=100", but after a
//     streamed answer the server closes the connection; after any other
//     it keeps it (5 s idle at most).
//   - It does not drain: SIGTERM before the model has loaded exits at
//     once; after, it stops its queue, cuts in-flight streams (no final
//     event), closes its port at once and then stays alive (EnvLinger,
//     2 minutes by default) until SIGKILL; a second signal exits 1.
//   - Router mode (no -m): models come from --models-preset; they load on
//     request (--models-autoload, the default) or with POST /models/load,
//     unload with POST /models/unload, and GET /models reports each as
//     unloaded, loading, loaded, sleeping or failed. Each running model
//     has its own server on 127.0.0.1 at a port the router picks (named
//     with --port in status.args), which takes EnvChildStart to start
//     before its weights load and EnvChildStop to exit when unloaded
//     (still "loaded" meanwhile, its streams cut at once). At
//     --models-max resident models, loading another evicts the least
//     recently used idle one: by count, not memory, and never a busy one;
//     while all are busy the request waits in a queue. --models-max 0 is
//     no bound. The preset is read at startup and again on GET
//     /models?reload=1: a running model whose section is gone or changed
//     (its alias aside) is stopped, cutting its streams, and the reload
//     answers once it has exited; one whose section is the same keeps
//     serving (with the aliases it started with); models not running
//     take their sections as they are now, and new sections add models.
//     SIGTERM stops every model and exits at once.
//
// A model file must begin with the GGUF magic; one that does not fails to
// load, and the process exits 1 as llama-server does. Tokens are words
// from a fixed list, not inference.
package llamastub

import (
	"context"
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
	exiting  []*model // router mode: models a reload stopped, until they exit
	routerMu sync.Mutex
	reloadMu sync.Mutex // one reload at a time

	mu          sync.Mutex
	closing     bool
	closeOnIdle map[net.Conn]bool // connections that served a stream
}

// idleTimeout is how long a kept connection may stay idle (cpp-httplib's
// keep-alive timeout, the "timeout=5" of keepAlive).
const idleTimeout = 5 * time.Second

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
	s := &Server{opts: opts, tune: tune, log: log, started: time.Now(), closeOnIdle: map[net.Conn]bool{}}
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
		var startup []*model
		for i, pm := range p.Models {
			if pm.LoadOnStartup {
				startup = append(startup, s.models[i])
			}
		}
		s.loadOnStartup(startup)
	}

	addr := net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(log, "main: couldn't bind HTTP server socket, hostname: %s, port: %d: %v\n", opts.Host, opts.Port, err)
		return 1
	}
	srv := &http.Server{Handler: s.handler(), ConnContext: s.connContext, ConnState: s.trackConn, IdleTimeout: idleTimeout}
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
// in-flight streams are cut and the port closes. A router then exits at
// once, its models' processes with it; a single model's process stays
// alive for the linger time (a real one outlives any grace a manager
// gives it, until SIGKILL). A second signal exits 1 at once.
func (s *Server) terminate(ln net.Listener, sig <-chan os.Signal) int {
	fmt.Fprintln(s.log, "srv    operator(): operator(): cleaning up before exit...")
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	ln.Close()
	if s.single == nil {
		return 0 // Run's deferred unload stops the models' servers
	}
	s.single.unload(StateUnloaded)
	deadline := time.NewTimer(s.tune.Linger)
	defer deadline.Stop()
	select {
	case <-deadline.C:
		return 0
	case <-sig:
		fmt.Fprintln(s.log, "main: received a second interrupt, terminating immediately")
		return 1
	}
}

// connKey keys a request's connection in its context.
type connKey struct{}

func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// closeAfter marks r's connection to be closed once its answer is done,
// without saying so in the headers: llama-server does that after a
// streamed answer.
func (s *Server) closeAfter(r *http.Request) {
	if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
		s.mu.Lock()
		s.closeOnIdle[c] = true
		s.mu.Unlock()
	}
}

func (s *Server) trackConn(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateIdle:
		if s.closeOnIdle[c] {
			delete(s.closeOnIdle, c)
			c.Close()
		}
	case http.StateClosed, http.StateHijacked:
		delete(s.closeOnIdle, c)
	}
}
