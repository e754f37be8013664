package llamastub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// Model states, as router mode's GET /models reports them.
const (
	// StateUnloaded is a model not in memory.
	StateUnloaded = "unloaded"
	// StateLoading is a model being loaded.
	StateLoading = "loading"
	// StateLoaded is a model in memory, serving requests.
	StateLoaded = "loaded"
	// StateSleeping is a loaded model the router put to sleep.
	StateSleeping = "sleeping"
	// StateFailed is a model whose load failed.
	StateFailed = "failed"
)

// ggufMagic opens every GGUF file; a model file without it fails to load,
// as it does for llama-server.
const ggufMagic = "GGUF"

// model is one loaded (or loadable) weights file with its slots.
type model struct {
	name    string
	path    string
	aliases []string
	slots   int
	// settings are a router model's preset section (merged over [*]).
	settings map[string]string
	tune     Tuning
	log      io.Writer
	// spawn is how long the model's process takes to start before its
	// weights load: a router's model runs in a child process, a single
	// model in the server's own.
	spawn time.Duration

	mu        sync.Mutex
	state     string
	failure   string
	done      chan struct{} // closed when the current load ends
	stopped   chan struct{} // closed when a router's stopping model has exited; nil when not stopping
	child     *http.Server  // a router model's own server on 127.0.0.1, while it runs
	childPort int
	cancel    context.CancelFunc
	cut       chan struct{} // closed to cut this load's in-flight streams
	free      chan int      // free slot ids
	busy      []bool
	deferred  int
	lastUsed  time.Time
	predicted int64
	prompt    int64
	requests  int64
}

func newModel(name, path string, aliases []string, slots int, tune Tuning, log io.Writer) *model {
	m := &model{name: name, path: path, aliases: aliases, slots: slots, tune: tune, log: log,
		state: StateUnloaded, busy: make([]bool, slots), free: make(chan int, slots)}
	for i := 0; i < slots; i++ {
		m.free <- i
	}
	return m
}

// names says whether the model answers to n: its name or one of its aliases.
func (m *model) answers(n string) bool {
	if n == m.name {
		return true
	}
	for _, a := range m.aliases {
		if a == n {
			return true
		}
	}
	return false
}

// startLoad begins loading the weights unless a load is running or done,
// and returns a channel closed when the load ends.
func (m *model) startLoad() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == StateLoading || m.state == StateLoaded {
		return m.done
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.state, m.failure, m.cancel = StateLoading, "", cancel
	m.done, m.cut = make(chan struct{}), make(chan struct{})
	m.lastUsed = time.Now()
	done := m.done
	fmt.Fprintf(m.log, "srv    load_model: loading model '%s'\n", m.path)
	go func() {
		err := m.loadWeights(ctx)
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.done != done { // unloaded meanwhile, which closed done
			return
		}
		defer close(done)
		switch {
		case err == nil:
			m.state = StateLoaded
			fmt.Fprintf(m.log, "srv    load_model: model '%s' loaded\n", m.path)
		case errors.Is(err, context.Canceled):
			m.state = StateUnloaded
		default:
			m.state, m.failure = StateFailed, err.Error()
			fmt.Fprintf(m.log, "srv    load_model: failed to load model, '%s': %v\n", m.path, err)
		}
	}()
	return done
}

// loadWeights checks the file is GGUF and takes as long as reading it at
// the tuned rate would.
func (m *model) loadWeights(ctx context.Context) error {
	f, err := os.Open(m.path)
	if err != nil {
		return fmt.Errorf("gguf_init_from_file: failed to open GGUF file: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	magic := make([]byte, len(ggufMagic))
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != ggufMagic {
		return fmt.Errorf("gguf_init_from_file_impl: invalid magic characters: %q", magic)
	}
	t := time.NewTimer(m.spawn + m.tune.loadTime(st.Size()))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// unload drops the weights at once, cutting any stream in flight, and
// leaves the model in state (unloaded or sleeping).
func (m *model) unload(state string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == StateSleeping && state == StateUnloaded {
		m.state = state // its weights are already out of memory
		return
	}
	if m.stopped != nil || (m.state != StateLoading && m.state != StateLoaded) {
		return // not running, or exiting already
	}
	m.cutLocked()
	m.exitedLocked(state)
}

// stop is the router's unload of a model running in a child process: the
// child stops its queue at once, cutting the streams in flight, and takes
// the tuned ChildStop to exit; until then the model still says loaded
// (or loading) and serves nothing. The returned channel is closed once
// it has exited.
func (m *model) stop() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped != nil {
		return m.stopped
	}
	stopped := make(chan struct{})
	if m.state == StateSleeping {
		m.state = StateUnloaded // its weights are already out of memory
	}
	if m.state != StateLoading && m.state != StateLoaded {
		close(stopped)
		return stopped
	}
	m.cutLocked()
	m.stopped = stopped
	fmt.Fprintf(m.log, "srv    unload: stopping model '%s'\n", m.name)
	time.AfterFunc(m.tune.ChildStop, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.exitedLocked(StateUnloaded)
		m.stopped = nil
		close(stopped)
	})
	return stopped
}

// cutLocked cancels the load and cuts the streams of a loading or loaded
// model.
func (m *model) cutLocked() {
	m.cancel()
	close(m.cut)
	if m.state == StateLoading {
		close(m.done) // wakes the requests waiting for this load
	}
	m.done = nil // a new load makes its own
}

// exitedLocked leaves the model in state with its child server closed.
func (m *model) exitedLocked(state string) {
	if m.child != nil {
		m.child.Close()
		m.child, m.childPort = nil, 0
	}
	m.state = state
	fmt.Fprintf(m.log, "srv    unload: model '%s' %s\n", m.name, state)
}

// snapshot is a consistent view of a model's counters.
type snapshot struct {
	state      string
	failure    string
	stopping   bool // a router's model whose process is exiting
	childPort  int  // a router's model's own port while it runs; 0 otherwise
	processing int
	deferred   int
	busy       []bool
	lastUsed   time.Time
	predicted  int64
	prompt     int64
	requests   int64
}

func (m *model) snapshot() snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := snapshot{state: m.state, failure: m.failure, stopping: m.stopped != nil, childPort: m.childPort, deferred: m.deferred,
		busy: append([]bool(nil), m.busy...), lastUsed: m.lastUsed,
		predicted: m.predicted, prompt: m.prompt, requests: m.requests}
	for _, b := range m.busy {
		if b {
			s.processing++
		}
	}
	return s
}

// idle reports whether no request holds or waits for a slot.
func (s snapshot) idle() bool { return s.processing == 0 && s.deferred == 0 }

// acquire takes a free slot, waiting (deferred) while all are busy, and
// returns it with the channel that cuts its stream.
func (m *model) acquire(ctx context.Context) (int, <-chan struct{}, error) {
	m.mu.Lock()
	cut := m.cut
	if m.stopped != nil || m.state != StateLoaded {
		m.mu.Unlock()
		return 0, nil, errCut
	}
	m.requests++
	m.lastUsed = time.Now()
	m.mu.Unlock()
	var id int
	select {
	case id = <-m.free:
	default:
		m.mu.Lock()
		m.deferred++
		m.mu.Unlock()
		var err error
		select {
		case id = <-m.free:
		case <-ctx.Done():
			err = ctx.Err()
		case <-cut:
			err = errCut
		}
		m.mu.Lock()
		m.deferred--
		m.mu.Unlock()
		if err != nil {
			return 0, nil, err
		}
	}
	m.mu.Lock()
	m.busy[id] = true
	m.mu.Unlock()
	return id, cut, nil
}

// release frees a slot and counts the tokens it served.
func (m *model) release(id int, prompt, predicted int) {
	m.mu.Lock()
	m.busy[id] = false
	m.prompt += int64(prompt)
	m.predicted += int64(predicted)
	m.lastUsed = time.Now()
	m.mu.Unlock()
	m.free <- id
}

// errCut means the server cut the request: it is stopping or the model
// was unloaded.
var errCut = errors.New("request cut: server stopping or model unloaded")
