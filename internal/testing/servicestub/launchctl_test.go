package servicestub

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/fuzzcheck"
)

const testPlist = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>dev.poolc.a-1</string>
	<key>ProgramArguments</key>
	<array>
		<string>/bin/sh</string>
		<string>-c</string>
		<string>echo "up $A"; trap 'echo got TERM; exit 0' TERM; while :; do sleep 0.05; done</string>
	</array>
	<key>EnvironmentVariables</key>
	<dict>
		<key>A</key>
		<string>x &amp; y&#xA;z</string>
	</dict>
	<key>StandardOutPath</key>
	<string>LOG</string>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<false/>
	<key>ExitTimeOut</key>
	<integer>30</integer>
</dict>
</plist>
`

func TestParsePlist(t *testing.T) {
	a, err := ParsePlist(testPlist)
	if err != nil {
		t.Fatal(err)
	}
	if a.Label != "dev.poolc.a-1" || len(a.Program) != 3 || a.Program[0] != "/bin/sh" || !slices.Equal(a.Env, []string{"A=x & y\nz"}) ||
		a.Stdout != "LOG" || a.Stderr != "" || !a.RunAtLoad || a.ExitTimeOut != 30*time.Second {
		t.Errorf("%+v", a)
	}
	for name, text := range map[string]string{
		"keep alive":    strings.Replace(testPlist, "<false/>", "<true/>", 1),
		"unknown key":   strings.Replace(testPlist, "<key>RunAtLoad</key>", "<key>UserName</key>", 1),
		"no label":      strings.Replace(testPlist, "<key>Label</key>\n\t<string>dev.poolc.a-1</string>", "", 1),
		"relative":      strings.Replace(testPlist, "<string>/bin/sh</string>", "<string>sh</string>", 1),
		"wrong type":    strings.Replace(testPlist, "<integer>30</integer>", "<string>30</string>", 1),
		"not xml":       "Label = x",
		"unclosed dict": testPlist[:strings.Index(testPlist, "</dict>\n</plist>")],
	} {
		if _, err := ParsePlist(text); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzParsePlist: any text parses or is refused without a hang; what is
// accepted has a label and an absolute executable.
func FuzzParsePlist(f *testing.F) {
	f.Add(testPlist)
	f.Add(`<plist><dict><key>Label</key><string>a</string><key>ProgramArguments</key><array><string>/a</string></array></dict></plist>`)
	f.Fuzz(func(t *testing.T, text string) {
		fuzzcheck.Within("ParsePlist", []byte(text), func() {
			a, err := ParsePlist(text)
			if err == nil && (a.Label == "" || len(a.Program) == 0 || !strings.HasPrefix(a.Program[0], "/")) {
				t.Fatalf("accepted %q as %+v", text, a)
			}
		})
	})
}

// TestLaunchctlStandInAnswersAsLaunchctl: bootstrap starts a RunAtLoad
// agent, print shows its pid, a second bootstrap fails, bootout stops it
// with SIGTERM and unloads it, and an agent not loaded is not found.
func TestLaunchctlStandInAnswersAsLaunchctl(t *testing.T) {
	home := t.TempDir()
	run := runner(t, Launchctl, "HOME="+home)
	gui := "gui/" + strconv.Itoa(os.Getuid())
	service := gui + "/dev.poolc.a-1"
	if _, errs, code := run("print", service); code != 113 || !strings.Contains(errs, `Could not find service "dev.poolc.a-1"`) {
		t.Errorf("print of an agent not loaded: %q exit %d", errs, code)
	}
	if _, errs, code := run("bootout", service); code != 3 {
		t.Errorf("bootout of an agent not loaded: %q exit %d", errs, code)
	}
	log := filepath.Join(t.TempDir(), "out.log")
	plist := filepath.Join(home, "a.plist")
	if err := os.WriteFile(plist, []byte(strings.Replace(testPlist, "LOG", log, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := run("bootstrap", gui, plist); code != 0 {
		t.Fatalf("bootstrap: %s exit %d", errs, code)
	}
	if _, _, code := run("bootstrap", gui, plist); code != 5 {
		t.Errorf("a second bootstrap: exit %d; want 5", code)
	}
	out, _, code := run("print", service)
	var pid int
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "pid" && f[1] == "=" {
			pid, _ = strconv.Atoi(f[2])
		}
	}
	if code != 0 || pid <= 0 || !strings.Contains(out, "state = running") {
		t.Fatalf("print: %q exit %d", out, code)
	}
	if _, errs, code := run("bootout", service); code != 0 {
		t.Fatalf("bootout: %s exit %d", errs, code)
	}
	if !gone(pid) {
		t.Fatalf("pid %d runs after the bootout", pid)
	}
	if b, _ := os.ReadFile(log); string(b) != "up x & y\nz\ngot TERM\n" {
		t.Errorf("log %q", b)
	}
	if _, _, code := run("print", service); code != 113 {
		t.Errorf("print after the bootout: exit %d", code)
	}
}
