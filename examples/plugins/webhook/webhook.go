package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"poolc.dev/poolc/plugins/sdk"
)

// Version is the webhook plugin's version, sent as its User-Agent too.
const Version = "0.1.0"

// configSchema is the CUE schema of the plugin's config block. poolc
// checks the block against it before Configure, and Configure decodes the
// block with it, so the schema is the one statement of the settings.
const configSchema = `
// url receives a POST of each step as JSON.
url: =~"^https?://[^/]+"
// headers are added to every request (for example Authorization).
headers?: [string]: string
// timeout_seconds limits each request.
timeout_seconds?: number & >0 | *30
`

// bodyLimit is how much of a response body a diagnostic quotes.
const bodyLimit = 500

// config is the plugin's config block, as configSchema declares it.
type config struct {
	URL            string            `json:"url"`
	Headers        map[string]string `json:"headers"`
	TimeoutSeconds float64           `json:"timeout_seconds"`
}

// Webhook is the actuator: it carries out every step kind by POSTing the
// step to the configured URL.
type Webhook struct {
	mu     sync.Mutex
	cfg    *config // nil until configured
	client http.Client
}

var _ sdk.Actuator = (*Webhook)(nil)

// Describe declares every step kind poolc plans.
func (w *Webhook) Describe(context.Context, sdk.DescribeRequest) sdk.DescribeResponse {
	return sdk.DescribeResponse{Name: "webhook", Version: Version, StepKinds: sdk.AllStepKinds(), ConfigSchema: configSchema}
}

// Configure decodes the config block with its schema; each problem names
// its attribute.
func (w *Webhook) Configure(_ context.Context, req sdk.ConfigureRequest) sdk.ConfigureResponse {
	var cfg config
	ds := sdk.DecodeConfig(configSchema, req.ConfigJSON, &cfg)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cfg = nil
	if !ds.HasErrors() {
		w.cfg = &cfg
	}
	return sdk.ConfigureResponse{Diagnostics: ds}
}

// Observe sees nothing: a webhook cannot tell what its endpoint did, so its
// capabilities name no part of a fleet and poolc keeps its own record.
func (w *Webhook) Observe(context.Context, sdk.ObserveRequest) sdk.ObserveResponse {
	return sdk.ObserveResponse{}
}

// Apply POSTs the step as JSON. A 2xx answer is success; 408, 409, 425,
// 429 and 5xx, and failing to reach the endpoint, are failures worth a
// retry; any other answer is a failure. The answer's body, trimmed and cut
// to 500 bytes, is quoted in the diagnostic.
func (w *Webhook) Apply(ctx context.Context, req sdk.ApplyRequest, progress sdk.ProgressFunc) sdk.ApplyResponse {
	w.mu.Lock()
	cfg := w.cfg
	w.mu.Unlock()
	if cfg == nil {
		return sdk.ApplyResponse{Diagnostics: sdk.Errorf(nil, "webhook is not configured")}
	}
	body, err := json.Marshal(req.Step)
	if err != nil {
		return sdk.ApplyResponse{Diagnostics: sdk.Errorf(nil, "webhook cannot encode step "+req.Step.ID+": "+err.Error())}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(cfg.TimeoutSeconds*float64(time.Second)))
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return sdk.ApplyResponse{Diagnostics: sdk.Errorf([]string{"url"}, err.Error())}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("User-Agent", "poolc-plugin-webhook/"+Version)
	for k, v := range cfg.Headers {
		hreq.Header.Set(k, v)
	}
	progress(sdk.Progress{Message: fmt.Sprintf("POST %s %s", cfg.URL, req.Step.ID), Fraction: -1})
	resp, err := w.client.Do(hreq)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return sdk.ApplyResponse{
			Retryable:   !errors.Is(ctx.Err(), context.Canceled),
			Diagnostics: sdk.Errorf(nil, fmt.Sprintf("webhook could not POST step %s to %s: %v", req.Step.ID, cfg.URL, err)),
		}
	}
	defer resp.Body.Close()
	quote := readQuote(resp.Body)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return sdk.ApplyResponse{}
	}
	return sdk.ApplyResponse{
		Retryable: retryable(resp.StatusCode),
		Diagnostics: sdk.Diagnostics{{
			Severity: sdk.Error,
			Summary:  fmt.Sprintf("webhook answered step %s with %s", req.Step.ID, resp.Status),
			Detail:   quote,
		}},
	}
}

// retryable reports whether an HTTP status says the request may succeed
// later: timeouts, conflicts, too early, too many requests, server errors.
func retryable(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return code >= 500
}

// readQuote reads a response body for a diagnostic: whitespace trimmed,
// at most bodyLimit bytes, never a cut UTF-8 character.
func readQuote(r io.Reader) string {
	data, _ := io.ReadAll(io.LimitReader(r, 4*bodyLimit))
	s := strings.TrimSpace(string(data))
	if len(s) <= bodyLimit {
		return s
	}
	s = s[:bodyLimit]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
