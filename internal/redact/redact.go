// Package redact removes credentials from text that comes back from
// plugins (step failures, progress, their stderr) before poolc prints or
// journals it: the userinfo of URLs (https://user:pass@host), the values
// of Authorization headers and bearer tokens, and the values of a
// plugin's own config that sit under a sensitive key (token, password,
// secret, api_key, authorization, ...) or in a field its config schema
// marks @poolc(sensitive), wherever they appear.
package redact

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Mask is what a credential is replaced with.
const Mask = "[redacted]"

var (
	// userinfo is the user[:password]@ of a URL, after its scheme.
	userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s@]+@`)
	// authorization is an Authorization header or field and its value,
	// with or without a scheme word (Bearer, Basic, ...).
	authorization = regexp.MustCompile(`(?i)\b((?:proxy-)?authorization"?\s*[:=]\s*"?)((?:bearer|basic|token|digest|negotiate)\s+)?[^\s",;}]+`)
	// bearer is a bearer token written anywhere.
	bearer = regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]+`)
	// sensitiveKey matches the config keys whose values are credentials.
	sensitiveKey = regexp.MustCompile(`(?i)(token|password|passwd|secret|api[_-]?key|authorization|credential|private[_-]?key)`)
)

// schemeWord are the words that start an Authorization value; alone they
// are no secret.
var schemeWord = map[string]bool{"bearer": true, "basic": true, "token": true, "digest": true, "negotiate": true}

// minSecret is the shortest config value treated as a secret: shorter
// ones ("1", "on") would mask ordinary words.
const minSecret = 4

// Redactor redacts text from one plugin, knowing the secrets of its config.
// The zero value redacts URLs, headers and tokens only.
type Redactor struct {
	secrets []string // longest first, so a secret inside another is masked whole
}

// ForConfig returns the redactor of a plugin whose config is config: every
// string under a sensitive key, at any depth, is a secret, and so is every
// string and number at or under one of the marked paths (the fields the
// plugin's schema marks sensitive, sdk.SensitivePaths; an element "*"
// matches any key or list index).
func ForConfig(config map[string]any, marked ...[]string) *Redactor {
	r := &Redactor{}
	r.collect(config, nil, marked, false)
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

// collect adds the secrets of v, found at path, to r; sensitive says that
// v lies under a sensitive key or a marked path.
func (r *Redactor) collect(v any, path []string, marked [][]string, sensitive bool) {
	sensitive = sensitive || isMarked(path, marked)
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			r.collect(x, append(path[:len(path):len(path)], k), marked, sensitive || sensitiveKey.MatchString(k))
		}
	case []any:
		for i, x := range v {
			r.collect(x, append(path[:len(path):len(path)], strconv.Itoa(i)), marked, sensitive)
		}
	case float64:
		if sensitive {
			r.add(strconv.FormatFloat(v, 'f', -1, 64))
		}
	case json.Number:
		if sensitive {
			r.add(v.String())
		}
	case string:
		if !sensitive {
			return
		}
		// "Bearer abc": the token may be printed without its scheme.
		for _, part := range append(strings.Fields(v), v) {
			if !schemeWord[strings.ToLower(part)] {
				r.add(part)
			}
		}
	}
}

// add makes s a secret, unless it is too short to tell from ordinary text.
func (r *Redactor) add(s string) {
	if len(s) >= minSecret {
		r.secrets = append(r.secrets, s)
	}
}

// isMarked reports whether path is one of marked, "*" matching any element.
func isMarked(path []string, marked [][]string) bool {
	for _, m := range marked {
		if len(m) == len(path) && len(m) > 0 && slices.EqualFunc(m, path, func(a, b string) bool { return a == "*" || a == b }) {
			return true
		}
	}
	return false
}

// String returns s with its credentials masked.
func (r *Redactor) String(s string) string {
	if r != nil {
		for _, secret := range r.secrets {
			s = strings.ReplaceAll(s, secret, Mask)
		}
	}
	// The patterns run only on text that holds their literal part: most
	// text (a progress message per step) holds none.
	if strings.Contains(s, "@") {
		s = userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
	}
	if hasFold(s, "authorization") {
		s = authorization.ReplaceAllString(s, "${1}${2}"+Mask)
	}
	if !hasFold(s, "bearer") {
		return s
	}
	return bearer.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasSuffix(m, Mask) {
			return m
		}
		return bearer.ReplaceAllString(m, "${1}"+Mask)
	})
}

// hasFold reports whether s holds word, which is ASCII and has no k or s
// (the letters with non-ASCII case folds), in any case.
func hasFold(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(word)], word) {
			return true
		}
	}
	return false
}
