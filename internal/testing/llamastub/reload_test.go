package llamastub

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
)

// aliases returns GET /models as name → aliases.
func (s *stub) aliases() map[string][]string {
	_, body := s.get("/models")
	var ms struct {
		Data []struct {
			ID      string
			Aliases []string
		}
	}
	if err := json.Unmarshal([]byte(body), &ms); err != nil {
		s.t.Fatal(err, body)
	}
	out := map[string][]string{}
	for _, m := range ms.Data {
		out[m.ID] = m.Aliases
	}
	return out
}

func TestReloadRereadsThePresetAndLeavesUnchangedRunningModelsServing(t *testing.T) {
	a, a2, b, c := modelFile(t, "a.gguf", 64), modelFile(t, "a2.gguf", 64), modelFile(t, "b.gguf", 64), modelFile(t, "c.gguf", 64)
	preset := writePreset(t, fmt.Sprintf("[*]\nparallel = 2\n[a]\nmodel = %s\nload-on-startup = true\n[b]\nmodel = %s\nalias = bee\n", a, b))
	s := startStub(t, fastRouter, "--models-preset", preset, "--models-max", "0", "--metrics")
	s.waitStatus(map[string]string{"a": StateLoaded, "b": StateUnloaded})

	// Without ?reload the router keeps the preset it read at startup.
	write := func(text string) {
		if err := os.WriteFile(preset, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(fmt.Sprintf("[*]\nparallel = 2\n[a]\nmodel = %s\nload-on-startup = true\nalias = ay\n[c]\nmodel = %s\nalias = sea\n", a, c))
	s.waitStatus(map[string]string{"a": StateLoaded, "b": StateUnloaded})

	// a streams through a reload that drops b, adds c and gives a (running)
	// an alias: a keeps serving, with the aliases it started with.
	r, closer := openStream(t, s.url, "a", 40)
	defer closer.Close()
	if code, body := s.get("/models?reload=1"); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	s.waitStatus(map[string]string{"a": StateLoaded, "c": StateUnloaded})
	if got := s.aliases(); len(got["a"]) != 0 || !slices.Equal(got["c"], []string{"sea"}) {
		t.Fatalf("aliases after reload: %v", got)
	}
	if complete, _ := readRest(r); !complete {
		t.Fatal("a's stream was cut by a reload that left a's section as it was")
	}
	if code, body := s.post("/v1/chat/completions", `{"model":"sea","max_tokens":1}`); code != 200 {
		t.Fatalf("the model the reload added, by alias: %d %s", code, body)
	}
	if code, body := s.post("/v1/chat/completions", `{"model":"bee","max_tokens":1}`); code != 400 {
		t.Fatalf("the model the reload removed: %d %s", code, body)
	}

	// Unloaded, a takes its alias at the next reload.
	if code, body := s.post("/models/unload", `{"model":"a"}`); code != 200 {
		t.Fatalf("unload: %d %s", code, body)
	}
	s.waitStatus(map[string]string{"a": StateUnloaded, "c": StateLoaded})
	s.get("/models?reload=1")
	if got := s.aliases(); !slices.Equal(got["a"], []string{"ay"}) {
		t.Fatalf("aliases of a after it unloaded and reloaded: %v", got)
	}

	// A running model whose section changed is unloaded, its stream cut.
	s.post("/models/load", `{"model":"a"}`)
	s.waitStatus(map[string]string{"a": StateLoaded, "c": StateLoaded})
	r, closer2 := openStream(t, s.url, "a", 100000)
	defer closer2.Close()
	write(fmt.Sprintf("[*]\nparallel = 2\n[a]\nmodel = %s\nalias = ay\n[c]\nmodel = %s\nalias = sea\n", a2, c))
	s.get("/models?reload=1")
	if complete, _ := readRest(r); complete {
		t.Fatal("a's stream completed through a reload that changed its model")
	}
	s.waitStatus(map[string]string{"a": StateUnloaded, "c": StateLoaded})
}

func TestLoadAndUnloadAnswerAsTheRouterDoes(t *testing.T) {
	preset := writePreset(t, fmt.Sprintf("[a]\nmodel = %s\n", modelFile(t, "a.gguf", 64)))
	s := startStub(t, nil, "--models-preset", preset, "--sleep-idle-seconds", "1")
	for _, c := range []struct {
		path, model string
		code        int
	}{
		{"/models/load", "nope", 404}, {"/models/unload", "nope", 400}, {"/models/unload", "a", 400},
		{"/models/load", "a", 200}, {"/models/load", "a", 400},
	} {
		if code, body := s.post(c.path, fmt.Sprintf(`{"model":%q}`, c.model)); code != c.code {
			t.Errorf("%s %s: %d %s, want %d", c.path, c.model, code, body, c.code)
		}
	}
	s.waitStatus(map[string]string{"a": StateSleeping})
	if code, body := s.post("/models/unload", `{"model":"a"}`); code != 200 {
		t.Fatalf("unload of a sleeping model: %d %s", code, body)
	}
	s.waitStatus(map[string]string{"a": StateUnloaded})
}
