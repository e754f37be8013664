package llamastub

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseArgsReadsLlamaServerFlags(t *testing.T) {
	o, err := ParseArgs(strings.Fields("--host 127.0.0.1 --port=8081 -m /m/q.gguf --alias chat,b,chat --metrics --slots -np 2 -c 4096 -ngl 99 --jinja"))
	if err != nil {
		t.Fatal(err)
	}
	if o.Port != 8081 || o.Model != "/m/q.gguf" || !o.Metrics || !o.Slots || o.Parallel != 2 || o.CtxSize != 4096 {
		t.Fatalf("%+v", o)
	}
	if !reflect.DeepEqual(o.Aliases, []string{"b", "chat"}) {
		t.Fatalf("aliases %v, want the sorted set [b chat]", o.Aliases)
	}
}

func TestParseArgsRouterMode(t *testing.T) {
	o, err := ParseArgs(strings.Fields("--port 9000 --models-preset p.ini --models-max 3 --no-models-autoload"))
	if err != nil {
		t.Fatal(err)
	}
	if o.Model != "" || o.ModelsPreset != "p.ini" || o.ModelsMax != 3 || o.Autoload {
		t.Fatalf("%+v", o)
	}
}

func TestParseArgsRefuses(t *testing.T) {
	for _, args := range []string{"--bogus", "--port", "--port x", "--port 70000", "-np 0", "stray", "--alias a"} {
		if _, err := ParseArgs(strings.Fields(args)); err == nil {
			t.Errorf("%q: want an error", args)
		}
	}
}

func FuzzParseArgs(f *testing.F) {
	f.Add("--port 8081 -m x --alias a,b --metrics")
	f.Add("--models-preset p.ini --models-max=2")
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseArgs(strings.Fields(s))
		if err == nil && (o.Port < 0 || o.Port > 65535 || o.Parallel < 1) {
			t.Fatalf("accepted %+v", o)
		}
	})
}
