package llamastub

import (
	"fmt"
	"strings"
	"testing"
)

// The router's /slots and /metrics as llama-server's router answers them:
// the model must be named, a probe of an unloaded model loads it unless
// autoload=false says not to, and then it is refused and nothing loads.

func TestRouterSlotsAndMetricsWithoutAModelAre400(t *testing.T) {
	preset := writePreset(t, fmt.Sprintf("[a]\nmodel = %s\nload-on-startup = true\n", modelFile(t, "a.gguf", 64)))
	s := startStub(t, nil, "--models-preset", preset, "--metrics", "--slots")
	s.waitStatus(map[string]string{"a": StateLoaded})
	for _, p := range []string{"/slots", "/metrics"} {
		if code, body := s.get(p); code != 400 || !strings.Contains(body, "model name is missing") {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
		if code, body := s.get(p + "?model=a"); code != 200 {
			t.Errorf("GET %s?model=a: %d %s", p, code, body)
		}
	}
}

func TestRouterProbeOfAnUnloadedModelLoadsItWithAutoload(t *testing.T) {
	preset := writePreset(t, fmt.Sprintf("[a]\nmodel = %s\n[b]\nmodel = %s\n", modelFile(t, "a.gguf", 64), modelFile(t, "b.gguf", 64)))
	s := startStub(t, nil, "--models-preset", preset, "--metrics", "--slots", "--models-autoload")
	if code, body := s.get("/slots?model=a"); code != 200 {
		t.Fatalf("GET /slots?model=a: %d %s", code, body)
	}
	if code, body := s.get("/metrics?model=b"); code != 200 || !strings.Contains(body, "llamacpp:requests_processing 0") {
		t.Fatalf("GET /metrics?model=b: %d %s", code, body)
	}
	s.waitStatus(map[string]string{"a": StateLoaded, "b": StateLoaded})
}

func TestRouterProbeWithAutoloadFalseLoadsNothing(t *testing.T) {
	preset := writePreset(t, fmt.Sprintf("[a]\nmodel = %s\n", modelFile(t, "a.gguf", 64)))
	s := startStub(t, nil, "--models-preset", preset, "--metrics", "--slots", "--models-autoload")
	for _, p := range []string{"/slots", "/metrics"} {
		if code, body := s.get(p + "?model=a&autoload=false"); code != 400 || !strings.Contains(body, `"model is not loaded"`) {
			t.Errorf("GET %s?model=a&autoload=false: %d %s", p, code, body)
		}
	}
	s.waitStatus(map[string]string{"a": StateUnloaded})
}
