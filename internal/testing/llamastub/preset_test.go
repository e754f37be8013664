package llamastub

import (
	"reflect"
	"strings"
	"testing"
)

func TestParsePresetMergesDefaults(t *testing.T) {
	p, err := ParsePreset("p.ini", `
; poolc writes this
[*]
ctx-size = 8192
parallel = 2

[qwen]
model = /m/q.gguf
alias = chat, qwen
load-on-startup = true

[coder]
model = /m/c.gguf
parallel = 1
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Models) != 2 {
		t.Fatalf("%+v", p.Models)
	}
	q, c := p.Models[0], p.Models[1]
	if q.Name != "qwen" || q.Path != "/m/q.gguf" || !q.LoadOnStartup || !reflect.DeepEqual(q.Aliases, []string{"chat", "qwen"}) || q.Settings["ctx-size"] != "8192" {
		t.Fatalf("qwen %+v", q)
	}
	if c.LoadOnStartup || c.Settings["parallel"] != "1" || c.Settings["ctx-size"] != "8192" {
		t.Fatalf("coder %+v", c)
	}
}

func TestParsePresetErrorsNameTheLine(t *testing.T) {
	for text, want := range map[string]string{
		"[a]\nmodel=x\n[a]\nmodel=y":          "p.ini:3: section [a] repeats the one on line 1",
		"k = v":                               "p.ini:1: key \"k\" before any section",
		"[a\n":                                "p.ini:1:",
		"[a]\nnovalue":                        "p.ini:2: want key = value",
		"[a]\nalias=x":                        "p.ini:1: model [a] has no model = PATH",
		"[a]\nmodel=x\nload-on-startup=maybe": "p.ini:1: model [a]: load-on-startup",
	} {
		_, err := ParsePreset("p.ini", text)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", text, err, want)
		}
	}
}

func FuzzParsePreset(f *testing.F) {
	f.Add("[*]\nc=1\n[a]\nmodel=/x\nalias=a,b\nload-on-startup=true\n")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePreset("f.ini", s)
		if err != nil {
			return
		}
		for _, m := range p.Models {
			if m.Path == "" || m.Name == "" || m.Name == "*" {
				t.Fatalf("accepted %+v", m)
			}
		}
	})
}
