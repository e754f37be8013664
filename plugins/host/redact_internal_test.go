package host

import (
	"bytes"
	"strings"
	"testing"

	"poolc.dev/poolc/internal/redact"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// What comes back from a plugin (its stderr lines, a step's diagnostics,
// progress) is printed without the credentials of its config, URL
// userinfo or Authorization values.
func TestPluginTextIsRedacted(t *testing.T) {
	d := pools.Plugin{Name: "webhook", Config: map[string]any{"headers": map[string]any{"Authorization": "Bearer tok-123456"}}}
	var buf bytes.Buffer
	out := &output{w: &buf}
	out.redactLines(d.Name, redactor(d, ""))
	w := out.writer(d.Name, false)
	if _, err := w.Write([]byte("posting with tok-123456 to https://bot:pw@hooks.lan/x\n")); err != nil {
		t.Fatal(err)
	}
	r := redact.ForConfig(d.Config)
	ds := redactResponse(r, sdk.Diagnostics{{Summary: "401 for Authorization: Bearer tok-123456", Detail: "url https://bot:pw@hooks.lan/x"}})
	var progress []string
	redactProgress(r, func(p sdk.Progress) { progress = append(progress, p.Message) })(sdk.Progress{Message: "retrying tok-123456"})
	all := buf.String() + ds[0].Summary + ds[0].Detail + strings.Join(progress, "")
	for _, secret := range []string{"tok-123456", "bot:pw"} {
		if strings.Contains(all, secret) {
			t.Errorf("%q is printed: %s", secret, all)
		}
	}
	if !strings.Contains(buf.String(), "webhook: posting with [redacted] to https://[redacted]@hooks.lan/x") {
		t.Errorf("line = %q", buf.String())
	}
}
