package llama

import (
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/servicestub"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, which -update rewrites.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", name, got)
	}
}

// goldenLane is the lane of the golden unit files: the argv a start
// runs, with the environment of the config.
func goldenLane(t *testing.T) unitSpec {
	set := Settings{Binary: "/opt/llama.cpp/bin/llama-server", Env: map[string]string{"GGML_CUDA_ENABLE_UNIFIED_MEMORY": "1", "LLAMA_ARG_THREADS": "8"}}.withDefaults()
	l := Lane{Name: "cognition", Host: "10.0.0.3", Port: 8081, Model: "/models/qwen3-32b-q4.gguf", Aliases: []string{"chat", "think"}, Args: []string{"-ngl", "99", "--ctx-size", "32768"}}
	env, err := set.environ()
	if err != nil {
		t.Fatal(err)
	}
	return unitSpec{Name: "UNIT", Lane: l.key(), Argv: set.argv(l), Env: env, Log: unitLog("/home/poolc/.poolc/lanes/spark-node-01", l.key()), StopGrace: set.StopGrace}
}

func TestSystemdUnitGolden(t *testing.T) {
	u := goldenLane(t)
	u.Name = systemdUnitName(u.Lane)
	if u.Name != "poolc-cognition-8081.service" {
		t.Errorf("unit name %q", u.Name)
	}
	text, err := systemdUnit(u)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "cognition.service", text)
}

func TestLaunchdPlistGolden(t *testing.T) {
	u := goldenLane(t)
	u.Name = launchdLabel(u.Lane)
	if u.Name != "dev.poolc.cognition-8081" {
		t.Errorf("label %q", u.Name)
	}
	text, err := launchdPlist(u)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "cognition.plist", text)
}

// hostileArgs are arguments each format has to carry as they are.
var hostileArgs = []string{
	"two words", `"double"`, `'single'`, "$HOME", "${HOME}", "$$", "100%", "%h", `back\slash`, `trailing\`,
	"new\nline", "tab\there", "cr\r", ";", `\;`, "a;b", "", " lead", "trail ", "<&>", "]]>", "--", "-->", "é ü 漢",
	"bell\a", "del\x7f",
}

// TestSystemdUnitCarriesHostileArguments: every argument and environment
// value reaches the process as it is, read back by the stand-in's
// implementation of systemd's rules (quoting, C escapes, specifiers and
// variable substitution).
func TestSystemdUnitCarriesHostileArguments(t *testing.T) {
	argv := append([]string{"/opt/llama server/bin/llama-server"}, hostileArgs...)
	var env []string
	for i, a := range hostileArgs {
		env = append(env, "V"+string(rune('A'+i))+"="+a)
	}
	u := unitSpec{Name: "poolc-x-1.service", Lane: "x@1", Argv: argv, Env: env, Log: "/var/log/x@1.log", StopGrace: 1500 * time.Millisecond}
	text, err := systemdUnit(u)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := servicestub.ParseUnit(text, servicestub.Specifiers{Home: "/home/h", Unit: u.Name, User: "h"})
	if err != nil {
		t.Fatalf("%v in\n%s", err, text)
	}
	if got := servicestub.Substitute(parsed.Exec, parsed.Env); !slices.Equal(got, argv) {
		t.Errorf("ExecStart runs\n%q\nwant\n%q\nunit:\n%s", got, argv, text)
	}
	if !slices.Equal(parsed.Env, env) {
		t.Errorf("environment\n%q\nwant\n%q", parsed.Env, env)
	}
	if parsed.Stdout.Path != u.Log || parsed.Stdout.Mode != "append" || parsed.Stderr != parsed.Stdout {
		t.Errorf("output %+v %+v", parsed.Stdout, parsed.Stderr)
	}
	if parsed.TimeoutStop != u.StopGrace || parsed.KillMode != "mixed" || !parsed.SendSIGKILL {
		t.Errorf("stop: %+v", parsed)
	}
	if strings.Count(text, "\nExecStart=") != 1 || strings.Contains(text, "\nRestart=on") {
		t.Errorf("unit:\n%s", text)
	}
	// A log path StandardOutput= cannot take is refused, not written.
	for _, log := range []string{"/var/log/a b.log", "/var/log/a\nExecStart=/bin/evil", "relative.log"} {
		u.Log = log
		if text, err := systemdUnit(u); err == nil {
			t.Errorf("log %q accepted:\n%s", log, text)
		}
	}
}

// TestLaunchdPlistCarriesHostileArguments: read back by an XML decoder,
// the plist holds every argument and value as it is; a character XML
// cannot hold is refused.
func TestLaunchdPlistCarriesHostileArguments(t *testing.T) {
	var carried []string
	for _, a := range hostileArgs {
		if xmlText(a) == nil {
			carried = append(carried, a)
		}
	}
	if len(carried) != len(hostileArgs)-1 {
		t.Fatalf("xmlText refuses %d of the arguments; want only the bell", len(hostileArgs)-len(carried))
	}
	argv := append([]string{"/opt/llama server/bin/llama-server"}, carried...)
	u := unitSpec{Name: "dev.poolc.x-1", Lane: "x@1", Argv: argv, Env: []string{"A=" + strings.Join(carried, "|")}, Log: "/Users/a b/x@1.log", StopGrace: 1500 * time.Millisecond}
	text, err := launchdPlist(u)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Dict struct {
			Items []struct {
				XMLName xml.Name
				Text    string   `xml:",chardata"`
				Strings []string `xml:"string"`
				Keys    []string `xml:"key"`
			} `xml:",any"`
		} `xml:"dict"`
	}
	if err := xml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("%v in\n%s", err, text)
	}
	// The launchctl stand-in reads it the same.
	if a, err := servicestub.ParsePlist(text); err != nil || !slices.Equal(a.Program, argv) || !slices.Equal(a.Env, u.Env) || a.Stdout != u.Log || a.ExitTimeOut != 2*time.Second {
		t.Errorf("the launchctl stand-in reads %+v (%v)", a, err)
	}
	got := map[string]int{}
	for i, it := range doc.Dict.Items {
		if it.XMLName.Local != "key" {
			continue
		}
		next := doc.Dict.Items[i+1]
		got[it.Text] = i + 1
		switch it.Text {
		case "ProgramArguments":
			if !slices.Equal(next.Strings, argv) {
				t.Errorf("ProgramArguments\n%q\nwant\n%q", next.Strings, argv)
			}
		case "EnvironmentVariables":
			if len(next.Keys) != 1 || next.Keys[0] != "A" || len(next.Strings) != 1 || next.Strings[0] != strings.TrimPrefix(u.Env[0], "A=") {
				t.Errorf("environment %q %q", next.Keys, next.Strings)
			}
		case "StandardOutPath", "StandardErrorPath":
			if next.Text != u.Log {
				t.Errorf("%s %q", it.Text, next.Text)
			}
		case "ExitTimeOut":
			if next.Text != "2" {
				t.Errorf("ExitTimeOut %q; want 2 (1.5 s rounded up)", next.Text)
			}
		case "KeepAlive":
			if next.XMLName.Local != "false" {
				t.Errorf("KeepAlive %s", next.XMLName.Local)
			}
		}
	}
	for _, k := range []string{"Label", "ProgramArguments", "EnvironmentVariables", "StandardOutPath", "StandardErrorPath", "RunAtLoad", "KeepAlive", "ExitTimeOut"} {
		if got[k] == 0 {
			t.Errorf("no %s in\n%s", k, text)
		}
	}
	for _, bad := range []string{"bell\a", "nul\x00", "bad\xffutf8", "\uFFFE"} {
		u.Argv = []string{"/bin/x", bad}
		if text, err := launchdPlist(u); err == nil {
			t.Errorf("argument %q accepted:\n%s", bad, text)
		}
	}
}

// FuzzSystemdQuote: any argument without a NUL, quoted for ExecStart,
// reads back as itself under systemd's rules.
func FuzzSystemdQuote(f *testing.F) {
	for _, a := range hostileArgs {
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, a string) {
		if strings.IndexByte(a, 0) >= 0 {
			return
		}
		text, err := systemdUnit(unitSpec{Name: "u.service", Lane: "u@1", Argv: []string{"/bin/x", a}, Env: []string{"A=" + a}, Log: "/l", StopGrace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		u, err := servicestub.ParseUnit(text, servicestub.Specifiers{})
		if err != nil {
			t.Fatalf("%v in\n%s", err, text)
		}
		if got := servicestub.Substitute(u.Exec, u.Env); !slices.Equal(got, []string{"/bin/x", a}) || !slices.Equal(u.Env, []string{"A=" + a}) {
			t.Fatalf("%q reads back as %q, env %q", a, got, u.Env)
		}
	})
}
