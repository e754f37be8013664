package redact

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	r := ForConfig(map[string]any{
		"url":     "https://hooks.example/poolc",
		"headers": map[string]any{"Authorization": "Bearer s3cr3t-token", "X-Trace": "on"},
		"auth":    map[string]any{"api_key": "AKIA1234567890", "user": "ops"},
		"list":    []any{map[string]any{"password": "hunter22"}},
		"token":   "ab", // too short to mask words
	})
	for in, want := range map[string]string{
		"GET https://ops:pa55@registry.lan/v2 failed":         "GET https://[redacted]@registry.lan/v2 failed",
		"dial ssh://deploy@node-1:22":                         "dial ssh://[redacted]@node-1:22",
		"request had Authorization: Bearer eyJhbGciOi.x.y ok": "request had Authorization: Bearer [redacted] ok",
		`{"authorization":"Basic dXNlcjpwYXNz"}`:              `{"authorization":"Basic [redacted]"}`,
		"token bearer abc.def refused":                        "token bearer [redacted] refused",
		"sent key AKIA1234567890 and hunter22":                "sent key [redacted] and [redacted]",
		"header was s3cr3t-token":                             "header was [redacted]",
		"plain text, user ops@node, 12 ab":                    "plain text, user ops@node, 12 ab",
		"https://hooks.example/poolc returned 500 on X-Trace": "https://hooks.example/poolc returned 500 on X-Trace",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	var zero *Redactor
	if got := zero.String("http://a:b@h/"); got != "http://[redacted]@h/" {
		t.Errorf("nil redactor: %q", got)
	}
}

// Whatever surrounds it, a config secret never survives redaction, nor
// does the password of a URL.
func FuzzString(f *testing.F) {
	for _, s := range []string{"x", "Authorization: ", "https://", "@", "hunter22hunter22", "Bearer  "} {
		f.Add(s, s)
	}
	r := ForConfig(map[string]any{"password": "hunter22", "token": "tok-9f8e7d"})
	f.Fuzz(func(t *testing.T, before, after string) {
		for _, secret := range []string{"hunter22", "tok-9f8e7d"} {
			if out := r.String(before + secret + after); strings.Contains(out, secret) {
				t.Fatalf("%q survived in %q", secret, out)
			}
		}
		if out := r.String(before + "https://u:pw-Zq81@h/" + after); strings.Contains(out, "pw-Zq81") {
			t.Fatalf("URL password survived in %q", out)
		}
	})
}

// Values at the paths a schema marks sensitive are secrets whatever their
// key, numbers too, in nested structs and list elements.
func TestMarkedPaths(t *testing.T) {
	r := ForConfig(map[string]any{
		"url":   "https://hooks.example/poolc",
		"pin":   float64(918273),
		"login": map[string]any{"user": "ops", "word": "open-sesame"},
		"hooks": []any{map[string]any{"name": "a", "key": "k-0001"}, map[string]any{"name": "b", "key": "k-0002"}},
	}, []string{"pin"}, []string{"login", "word"}, []string{"hooks", "*", "key"})
	in := "pin 918273, word open-sesame, keys k-0001 k-0002, user ops at https://hooks.example/poolc"
	want := "pin [redacted], word [redacted], keys [redacted] [redacted], user ops at https://hooks.example/poolc"
	if got := r.String(in); got != want {
		t.Errorf("String(%q) = %q, want %q", in, got, want)
	}
}
