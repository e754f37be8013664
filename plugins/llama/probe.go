package llama

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxProbeBody bounds what is read of a lane's answer.
const maxProbeBody = 1 << 20

// prober asks a lane's HTTP API, through connections the node opens.
type prober struct {
	client *http.Client
	addr   string
	query  string // added to every request: a router's "model=NAME"
}

// withQuery is p asking every path with query q.
func (p prober) withQuery(q string) prober {
	p.query = q
	return p
}

// get returns the status and body of GET path.
func (p prober) get(ctx context.Context, path string) (int, []byte, error) {
	if p.query != "" {
		path += "?" + p.query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+path, nil)
	if err != nil {
		return 0, nil, err
	}
	return p.do(req)
}

// do sends req and returns the status and body of the answer; a body
// over maxProbeBody is an error that says so, not a body cut short.
func (p prober) do(req *http.Request) (int, []byte, error) {
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxProbeBody+1))
	if err == nil && len(b) > maxProbeBody {
		err = fmt.Errorf("%s %s: the answer is too large: more than %d bytes", req.Method, req.URL.Path, maxProbeBody)
	}
	return resp.StatusCode, b, err
}

// post returns the status and body of POST path with a JSON body.
func (p prober) post(ctx context.Context, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.addr+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return p.do(req)
}

// getJSON decodes the body of GET path, which must answer 200, into v.
func (p prober) getJSON(ctx context.Context, path string, v any) error {
	code, b, err := p.get(ctx, path)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, code, strings.TrimSpace(string(b)))
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: %v", path, err)
	}
	return nil
}

// props is the part of /props the actuator reads.
type props struct {
	ModelPath  string `json:"model_path"`
	TotalSlots int    `json:"total_slots"`
	BuildInfo  string `json:"build_info"`
}

// modelNames returns every name /v1/models answers to: ids and aliases.
// llama-server keeps aliases as a sorted set, so membership is what counts,
// not which one is the id.
func (p prober) modelNames(ctx context.Context) (map[string]bool, error) {
	var list struct {
		Data []struct {
			ID      string   `json:"id"`
			Aliases []string `json:"aliases"`
		} `json:"data"`
	}
	if err := p.getJSON(ctx, "/v1/models", &list); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, d := range list.Data {
		names[d.ID] = true
		for _, a := range d.Aliases {
			names[a] = true
		}
	}
	return names, nil
}

// errNotLoaded is a router's answer for a model it does not run, to a
// probe that asked it not to load one (autoload=false): exactly 400 with
// the message "model is not loaded".
var errNotLoaded = errors.New("model is not loaded")

// notLoaded reports whether an answer is the router's errNotLoaded.
func notLoaded(code int, body []byte) bool {
	return code == http.StatusBadRequest && errorMessage(body) == errNotLoaded.Error()
}

// loadingModel reports whether an answer is a single-model server's
// while it loads its model, when it serves no request at all: exactly
// 503 with the message "Loading model".
func loadingModel(code int, body []byte) bool {
	return code == http.StatusServiceUnavailable && errorMessage(body) == "Loading model"
}

// errorMessage is the message of llama-server's error answer, "" for
// any other body.
func errorMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return e.Error.Message
}

// busy returns how many requests the lane is processing or holding back:
// the slots /slots says are processing (or, on a server without /slots,
// /metrics' requests_processing) and /metrics' requests_deferred, which
// wait for a slot and are not in /slots. Anything but a clear answer (no
// answer, a timeout, an unexpected status, a body that does not parse) is
// an error: busy, unknown, never idle. A router's errNotLoaded is
// returned as such; a single-model server still loading its model
// (which it answers every request with) has nothing in flight.
func (p prober) busy(ctx context.Context) (int, error) {
	code, b, err := p.get(ctx, "/slots")
	if err != nil {
		return 0, fmt.Errorf("GET /slots: %w", err)
	}
	if notLoaded(code, b) {
		return 0, errNotLoaded
	}
	if p.query == "" && loadingModel(code, b) {
		return 0, nil
	}
	processing := -1
	switch code {
	case http.StatusOK:
		var slots []struct {
			IsProcessing *bool `json:"is_processing"`
		}
		if err := json.Unmarshal(b, &slots); err != nil {
			return 0, fmt.Errorf("GET /slots: %v in %q", err, clip(b))
		}
		processing = 0
		for _, s := range slots {
			if s.IsProcessing == nil {
				return 0, fmt.Errorf("GET /slots: a slot without is_processing in %q", clip(b))
			}
			if *s.IsProcessing {
				processing++
			}
		}
	case http.StatusNotImplemented:
		// Started without --slots: /metrics counts the processing too.
	default:
		return 0, fmt.Errorf("GET /slots: %d %s", code, clip(b))
	}
	code, b, err = p.get(ctx, "/metrics")
	if err != nil {
		return 0, fmt.Errorf("GET /metrics: %w", err)
	}
	if notLoaded(code, b) {
		return 0, errNotLoaded
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %d %s", code, clip(b))
	}
	m, err := parseMetrics(string(b))
	if err != nil {
		return 0, fmt.Errorf("GET /metrics: %v", err)
	}
	deferred, ok := m["llamacpp:requests_deferred"]
	if !ok {
		return 0, errors.New("GET /metrics: no llamacpp:requests_deferred")
	}
	if processing < 0 {
		v, ok := m["llamacpp:requests_processing"]
		if !ok {
			return 0, errors.New("GET /metrics: no llamacpp:requests_processing")
		}
		processing = int(v)
	}
	return processing + int(deferred), nil
}

// clip is an answer shortened for a message.
func clip(b []byte) string {
	const max = 200
	s := strings.TrimSpace(string(b))
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

// parseMetrics reads the samples of a Prometheus text exposition without
// labels or with them (labels are dropped, samples of one name summed).
func parseMetrics(text string) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), maxProbeBody)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, ok := strings.Cut(line, " ")
		if i := strings.IndexByte(name, '{'); i >= 0 {
			end := strings.LastIndexByte(line, '}')
			if end < i {
				return nil, fmt.Errorf("metrics line %d: unclosed labels", n)
			}
			name, rest, ok = line[:i], line[end+1:], true
		}
		if !ok || name == "" {
			return nil, fmt.Errorf("metrics line %d: no value", n)
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("metrics line %d: no value", n)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: value %q: %v", n, fields[0], err)
		}
		out[name] += v
	}
	return out, sc.Err()
}
