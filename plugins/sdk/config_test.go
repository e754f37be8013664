package sdk_test

import (
	"reflect"
	"strings"
	"testing"

	"poolc.dev/poolc/plugins/sdk"
)

const schema = `
url: string
headers?: [string]: string
timeout_seconds?: number & >0 | *30
`

func TestDecodeConfigFillsDefaults(t *testing.T) {
	var cfg struct {
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		Timeout float64           `json:"timeout_seconds"`
	}
	if ds := sdk.DecodeConfig(schema, []byte(`{"url": "http://x", "headers": {"A": "b"}}`), &cfg); len(ds) != 0 {
		t.Fatal(ds)
	}
	if cfg.URL != "http://x" || cfg.Headers["A"] != "b" || cfg.Timeout != 30 {
		t.Errorf("decoded %+v", cfg)
	}
}

func TestCheckConfigNamesEachAttribute(t *testing.T) {
	for _, tc := range []struct {
		config string
		paths  [][]string
		says   string
	}{
		{`{}`, [][]string{{"url"}}, "incomplete"},
		{`{"url": 1}`, [][]string{{"url"}}, "mismatched types"},
		{`{"url": "x", "timeout_seconds": 0}`, [][]string{{"timeout_seconds"}}, "invalid value 0"},
		{`{"url": "x", "headers": {"A": 1}}`, [][]string{{"headers", "A"}}, "mismatched types"},
		{`{"url": "x", "retries": 3}`, [][]string{{"retries"}}, "not allowed"},
		{`[1]`, [][]string{nil}, ""},
	} {
		_, ds := sdk.CheckConfig(schema, []byte(tc.config))
		var paths [][]string
		for _, d := range ds {
			paths = append(paths, d.Path)
		}
		if !reflect.DeepEqual(paths, tc.paths) || (tc.says != "" && !strings.Contains(ds[0].Summary, tc.says)) {
			t.Errorf("%s: %+v, want paths %q saying %q", tc.config, ds, tc.paths, tc.says)
		}
	}
}

func TestCheckConfigWithoutSchemaWantsAnObject(t *testing.T) {
	if _, ds := sdk.CheckConfig("", []byte(`{"anything": [1]}`)); len(ds) != 0 {
		t.Error(ds)
	}
	if _, ds := sdk.CheckConfig("", []byte(`"x"`)); !ds.HasErrors() {
		t.Error("a string was accepted as a config block")
	}
}
