package sdk

import (
	"reflect"
	"strings"
	"testing"
)

func TestSensitivePaths(t *testing.T) {
	schema := `
url:      string
token?:   string @poolc(sensitive)
auth?: {
	user?:     string
	password?: string @poolc(sensitive)
}
headers?: {[string]: string} @poolc(sensitive)
hooks?: [...{
	name:    string
	secret?: string @poolc(sensitive,other)
}]
note?: string @poolc(doc="not sensitive")
`
	want := [][]string{{"token"}, {"auth", "password"}, {"headers"}, {"hooks", "*", "secret"}}
	if got := SensitivePaths(schema); !reflect.DeepEqual(got, want) {
		t.Errorf("SensitivePaths = %q, want %q", got, want)
	}
	if got := SensitivePaths("x: "); got != nil {
		t.Errorf("a schema that does not compile: %q", got)
	}
}

// CheckConfig's own messages never hold a sensitive value, even when the
// value is what is wrong.
func TestCheckConfigRedactsSensitiveValues(t *testing.T) {
	schema := "pin?: int @poolc(sensitive)\nport?: int\n"
	_, ds := CheckConfig(schema, []byte(`{"pin": "hunter2-7731", "port": "p-4321"}`))
	if len(ds) != 2 {
		t.Fatalf("diagnostics %+v, want one per attribute", ds)
	}
	for _, d := range ds {
		if strings.Contains(d.Summary+d.Detail, "hunter2-7731") {
			t.Errorf("the sensitive value is in %q", d.Summary)
		}
	}
	if msg := ds[0].Summary + ds[1].Summary; !strings.Contains(msg, "p-4321") {
		t.Errorf("a value that is not sensitive should still be shown: %q", msg)
	}
}
