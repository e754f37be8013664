package host_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"testing"

	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/plugins/sdk/sdktest"
	"poolc.dev/poolc/pools"
)

// TestWebhookExample builds the example third-party plugin from its own
// module, finds it on the plugin path, pins it, and applies steps through
// it against a real HTTP server, which receives each step as the SDK's
// JSON.
func TestWebhookExample(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, host.BinaryName("webhook"))
	sum := build(t, "../../examples/plugins/webhook", ".", bin)

	t.Run("Conformance", func(t *testing.T) { sdktest.ConformanceBinary(t, bin) })

	type answer struct {
		code int
		body string
	}
	answers := make(chan answer, 1)
	received := make(chan sdk.Step, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var step sdk.Step
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &step); err != nil || r.Method != http.MethodPost || r.Header.Get("X-Token") != "secret" {
			t.Errorf("webhook sent %s %q with X-Token %q: %v", r.Method, data, r.Header.Get("X-Token"), err)
		}
		received <- step
		a := <-answers
		w.WriteHeader(a.code)
		_, _ = io.WriteString(w, a.body)
	}))
	defer srv.Close()

	set := start(t, []pools.Plugin{{
		Name:   "webhook",
		SHA256: sum,
		Config: map[string]any{"url": srv.URL + "/steps", "headers": map[string]any{"X-Token": "secret"}, "timeout_seconds": 5},
	}}, host.Options{PluginPath: []string{dir}})
	if got := set.Plugins()[0]; got.Path != bin || got.SHA256 != sum || !reflect.DeepEqual(got.Kinds, sdk.AllStepKinds()) {
		t.Errorf("Plugins = %+v", got)
	}
	obs, ds := set.Observe(context.Background())
	fleet := pools.Fleet{Lanes: []pools.LaneState{{Name: "kept", Node: "n1"}}}
	if drift := obs.Refresh(&fleet); len(ds) != 0 || len(drift) != 0 || len(fleet.Lanes) != 1 {
		t.Errorf("Observe = %+v, %v, %v: a plugin that observes nothing changed the state", fleet, drift, ds)
	}

	act, ok := set.Plugin("webhook")
	if !ok {
		t.Fatal("no plugin webhook")
	}
	step := sdktest.Sample(sdk.KindStart)
	for _, tc := range []struct {
		name      string
		answer    answer
		failed    bool
		retryable bool
		detail    string
	}{
		{"success", answer{204, ""}, false, false, ""},
		{"503 is retryable", answer{503, "  loading model, try later \n"}, true, true, "loading model, try later"},
		{"400 is a failure", answer{400, `{"error":"unknown lane"}`}, true, false, `{"error":"unknown lane"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answers <- tc.answer
			resp := act.Apply(context.Background(), sdk.ApplyRequest{Step: step}, nil)
			if got := <-received; !reflect.DeepEqual(got, step) {
				t.Errorf("endpoint got %+v\nwant %+v", got, step)
			}
			if resp.Diagnostics.HasErrors() != tc.failed || resp.Retryable != tc.retryable {
				t.Fatalf("Apply = %+v", resp)
			}
			if tc.failed && resp.Diagnostics[0].Detail != tc.detail {
				t.Errorf("detail = %q, want %q", resp.Diagnostics[0].Detail, tc.detail)
			}
		})
	}
}
