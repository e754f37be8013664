package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/plugins/sdk/sdktest"
)

// TestConformance is what every plugin should have: poolc's contract
// checks, run in process over a real gRPC connection.
func TestConformance(t *testing.T) { sdktest.Conformance(t, &Webhook{}) }

func TestConfigure(t *testing.T) {
	for _, tc := range []struct {
		config string
		paths  [][]string
	}{
		{`{"url": "https://hooks.example/poolc", "headers": {"Authorization": "Bearer x"}, "timeout_seconds": 2.5}`, nil},
		{`{}`, [][]string{{"url"}}},
		{`{"url": "ftp://x"}`, [][]string{{"url"}}},
		{`{"url": "http://x", "headers": {"A": 1}, "timeout_seconds": 0, "retries": 3}`, [][]string{{"headers", "A"}, {"timeout_seconds"}, {"retries"}}},
		{`[1, 2]`, [][]string{nil}},
	} {
		resp := (&Webhook{}).Configure(context.Background(), sdk.ConfigureRequest{ConfigJSON: []byte(tc.config)})
		var paths [][]string
		for _, d := range resp.Diagnostics {
			if d.Severity != sdk.Error {
				t.Errorf("%s: %+v is not an error", tc.config, d)
			}
			paths = append(paths, d.Path)
		}
		if !reflect.DeepEqual(paths, tc.paths) {
			t.Errorf("%s: diagnostics at %q, want %q: %v", tc.config, paths, tc.paths, resp.Diagnostics)
		}
	}
}

func TestApplyStatuses(t *testing.T) {
	status := 0
	body := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	w := &Webhook{}
	if ds := w.Configure(context.Background(), sdk.ConfigureRequest{ConfigJSON: []byte(`{"url": "` + srv.URL + `"}`)}).Diagnostics; len(ds) != 0 {
		t.Fatal(ds)
	}
	for _, tc := range []struct {
		status            int
		failed, retryable bool
	}{
		{200, false, false}, {201, false, false}, {408, true, true}, {409, true, true}, {425, true, true},
		{429, true, true}, {500, true, true}, {503, true, true}, {400, true, false}, {403, true, false}, {404, true, false},
	} {
		status = tc.status
		body = strings.Repeat("é", 400) // 800 bytes
		resp := w.Apply(context.Background(), sdk.ApplyRequest{Step: sdktest.Sample(sdk.KindStart)}, func(sdk.Progress) {})
		if resp.Diagnostics.HasErrors() != tc.failed || resp.Retryable != tc.retryable {
			t.Errorf("%d: Apply = %+v", tc.status, resp)
		}
		if tc.failed && resp.Diagnostics[0].Detail != strings.Repeat("é", 250) {
			t.Errorf("%d: detail is %d bytes", tc.status, len(resp.Diagnostics[0].Detail))
		}
	}
	srv.Close()
	resp := w.Apply(context.Background(), sdk.ApplyRequest{Step: sdktest.Sample(sdk.KindStart)}, func(sdk.Progress) {})
	if !resp.Diagnostics.HasErrors() || !resp.Retryable {
		t.Errorf("Apply to a closed server = %+v", resp)
	}
}
