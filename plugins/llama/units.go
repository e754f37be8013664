package llama

import (
	"fmt"
	"math"
	"path"
	"strings"
	"time"
	"unicode/utf8"
)

// The ways a lane's own process may run (Settings.ServiceManager).
const (
	// ServiceNone starts the process detached from the session (setsid,
	// else nohup), as the start script does.
	ServiceNone = "none"
	// ServiceSystemd runs it as a systemd user unit (systemctl --user).
	ServiceSystemd = "systemd"
	// ServiceLaunchd runs it as a per-user LaunchAgent (launchctl in the
	// gui/UID domain).
	ServiceLaunchd = "launchd"
)

// serviceManagerSchema is the CUE type of the service_manager setting.
const serviceManagerSchema = `"` + ServiceNone + `" | "` + ServiceSystemd + `" | "` + ServiceLaunchd + `"`

// unitSpec is what a unit file says of a lane: the unit's name, the
// server's argv (an absolute executable first), its environment
// ("NAME=value", sorted), its log (absolute: stdout and stderr both) and
// how long it has after SIGTERM before SIGKILL.
type unitSpec struct {
	Name      string
	Lane      string // the lane's key, for the description
	Argv      []string
	Env       []string
	Log       string
	StopGrace time.Duration
}

// serviceManager is one way a lane's own process runs. unit names the
// unit of a lane key ("" for none); render writes its unit file (nil
// for none); sh defines the shell functions the scripts call: launch
// (with dir, name, unit and log set, the server argv as its arguments
// when there is no unit file, else the unit file on stdin; it prints
// the process's pid, 0 when it is gone already) and teardown UNIT (stop
// and remove the unit; a unit that is gone already is no error).
type serviceManager struct {
	unit   func(key string) string
	render func(unitSpec) (string, error)
	sh     string
	// start, stop, forget and forgetGone are the scripts built on sh.
	start, stop, forget, forgetGone string
}

func newServiceManager(unit func(string) string, render func(unitSpec) (string, error), sh string) serviceManager {
	return serviceManager{unit: unit, render: render, sh: sh,
		start:      shLives + sh + scriptStartBody,
		stop:       "set -e\n" + sh + `teardown "$1"` + "\n",
		forget:     "set -e\n" + sh + scriptForgetBody,
		forgetGone: "set -e\n" + shLives + sh + scriptForgetGoneBody}
}

// serviceManagers holds the three ways, by their setting's value.
var serviceManagers = map[string]serviceManager{
	ServiceNone:    newServiceManager(func(string) string { return "" }, nil, shDetached),
	ServiceSystemd: newServiceManager(systemdUnitName, systemdUnit, shSystemd),
	ServiceLaunchd: newServiceManager(launchdLabel, launchdPlist, shLaunchd),
}

// manager is the way the settings run lanes.
func (s Settings) manager() (serviceManager, error) {
	m, ok := serviceManagers[s.ServiceManager]
	if !ok {
		return serviceManager{}, fmt.Errorf("service manager %q: want %s", s.ServiceManager, serviceManagerSchema)
	}
	return m, nil
}

// shDetached starts the server argv detached from the session, with the
// environment read from stdin (NAME=value lines), so that no command
// line shows it.
const shDetached = `launch() {
  while IFS= read -r kv; do export "$kv"; done
  if command -v setsid >/dev/null 2>&1; then
    setsid "$@" </dev/null >>"$log" 2>&1 &
  else
    nohup "$@" </dev/null >>"$log" 2>&1 &
  fi
  echo $!
}
teardown() { :; }
`

// shSystemd runs a lane as a systemd user unit. The unit file goes where
// the user manager reads units, the pid is the unit's MainPID (0 when it
// has none), and the teardown stops an active unit (SIGTERM, then
// SIGKILL after its TimeoutStopSec: systemctl stop waits for that), then
// removes the file and reloads.
const shSystemd = `unitfile() { printf '%s\n' "${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user/$1"; }
launch() {
  f=$(unitfile "$unit")
  mkdir -p "${f%/*}"
  (umask 077 && cat > "$f.tmp")
  mv -f "$f.tmp" "$f"
  systemctl --user daemon-reload
  systemctl --user start "$unit"
  systemctl --user show -p MainPID --value "$unit"
}
teardown() {
  f=$(unitfile "$1")
  if systemctl --user is-active --quiet "$1"; then systemctl --user stop "$1"; fi
  if [ -e "$f" ]; then
    rm -f "$f"
    systemctl --user daemon-reload
  fi
}
`

// shLaunchd runs a lane as a LaunchAgent of the login's gui domain. The
// pid is the "pid = N" line of launchctl print (launchd spawns the
// process after bootstrap returns, so it is waited for); a service still
// loaded whose process is gone is booted out before the new bootstrap.
// bootout sends SIGTERM, then SIGKILL after the plist's ExitTimeOut.
const shLaunchd = `unitfile() { printf '%s\n' "$HOME/Library/LaunchAgents/$1.plist"; }
domain() { printf 'gui/%s\n' "$(id -u)"; }
mainpid() { launchctl print "$(domain)/$1" 2>/dev/null | awk '$1 == "pid" && $2 == "=" { print $3; exit }'; }
launch() {
  f=$(unitfile "$unit")
  mkdir -p "${f%/*}"
  (umask 077 && cat > "$f.tmp")
  mv -f "$f.tmp" "$f"
  pid=$(mainpid "$unit")
  if [ -n "$pid" ]; then echo "$pid"; return; fi
  if launchctl print "$(domain)/$unit" >/dev/null 2>&1; then launchctl bootout "$(domain)/$unit"; fi
  launchctl bootstrap "$(domain)" "$f"
  n=0
  while [ -z "$pid" ] && [ "$n" -lt 50 ]; do
    sleep 0.1
    pid=$(mainpid "$unit")
    n=$((n+1))
  done
  echo "${pid:-0}"
}
teardown() {
  if launchctl print "$(domain)/$1" >/dev/null 2>&1; then launchctl bootout "$(domain)/$1"; fi
  rm -f "$(unitfile "$1")"
}
`

// unitBase is the part of a unit's name that a lane key gives: the key
// with '@' (systemd's instance separator) as '-'. The port is all digits
// after the last '-', so two keys never give one name.
func unitBase(key string) string { return "poolc-" + strings.ReplaceAll(key, "@", "-") }

// systemdUnitName is the systemd unit of lane key.
func systemdUnitName(key string) string { return unitBase(key) + ".service" }

// launchdLabel is the LaunchAgent label (and plist name) of lane key.
func launchdLabel(key string) string {
	return "dev.poolc." + strings.TrimPrefix(unitBase(key), "poolc-")
}

// checkUnitSpec refuses what no unit file can say: a relative or unclean
// executable or log path.
func checkUnitSpec(u unitSpec) error {
	if len(u.Argv) == 0 {
		return fmt.Errorf("unit %s: no command", u.Name)
	}
	if err := checkPath("unit "+u.Name+": executable", u.Argv[0]); err != nil {
		return err
	}
	return checkPath("unit "+u.Name+": log", u.Log)
}

// systemdUnit renders the systemd user unit running u. Every argument of
// ExecStart is one double-quoted word in systemd's syntax: '%' doubled
// (specifiers are expanded everywhere), '$' doubled (no environment
// substitution), backslash, quote and control characters as C escapes,
// and a lone ";" (a command separator) as "\;".
func systemdUnit(u unitSpec) (string, error) {
	if err := checkUnitSpec(u); err != nil {
		return "", err
	}
	if strings.ContainsFunc(u.Log, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", fmt.Errorf("unit %s: log %q holds a space or control character, which StandardOutput= cannot take", u.Name, u.Log)
	}
	words := make([]string, len(u.Argv))
	for i, a := range u.Argv {
		if a == ";" {
			words[i] = `\;`
			continue
		}
		words[i] = systemdQuote(a, true)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by poolc for lane %s, which poolc starts and stops: not to be enabled or edited.\n", u.Lane)
	fmt.Fprintf(&b, "[Unit]\nDescription=%s\n\n[Service]\nType=exec\n", strings.ReplaceAll("poolc lane "+u.Lane, "%", "%%"))
	fmt.Fprintf(&b, "ExecStart=%s\n", strings.Join(words, " "))
	for _, kv := range u.Env {
		fmt.Fprintf(&b, "Environment=%s\n", systemdQuote(kv, false))
	}
	log := strings.ReplaceAll(u.Log, "%", "%%")
	fmt.Fprintf(&b, "StandardInput=null\nStandardOutput=append:%s\nStandardError=append:%s\n", log, log)
	b.WriteString("# No automatic restart: poolc's observe reports a lane whose process is\n" +
		"# gone as drift, and the plan repairs it.\nRestart=no\n")
	b.WriteString("# Stop: SIGTERM to the server, SIGKILL to what is left after the grace.\n")
	fmt.Fprintf(&b, "KillSignal=SIGTERM\nKillMode=mixed\nTimeoutStopSec=%dms\nSendSIGKILL=yes\n", u.StopGrace.Milliseconds())
	return b.String(), nil
}

// systemdQuote is s as one double-quoted word of a systemd setting: with
// dollar, '$' is doubled too (ExecStart substitutes variables,
// Environment= does not).
func systemdQuote(s string, dollar bool) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < ' ' || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		case c == '%':
			b.WriteString("%%")
		case c == '$' && dollar:
			b.WriteString("$$")
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// launchdPlist renders the LaunchAgent running u. Every string is XML
// escaped; a character XML cannot hold at all (control characters but
// tab, newline and carriage return) is refused. launchd sends SIGTERM on
// bootout and SIGKILL after ExitTimeOut (whole seconds, rounded up).
func launchdPlist(u unitSpec) (string, error) {
	if err := checkUnitSpec(u); err != nil {
		return "", err
	}
	all := append(append([]string{u.Name, u.Log}, u.Argv...), u.Env...)
	for _, s := range all {
		if err := xmlText(s); err != nil {
			return "", fmt.Errorf("unit %s: %w", u.Name, err)
		}
	}
	var b strings.Builder
	str := func(s string) string { return "<string>" + xmlEscape(s) + "</string>" }
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by poolc, which starts and stops this lane. -->
<plist version="1.0">
<dict>
`)
	fmt.Fprintf(&b, "\t<key>Label</key>\n\t%s\n", str(u.Name))
	b.WriteString("\t<key>ProgramArguments</key>\n\t<array>\n")
	for _, a := range u.Argv {
		fmt.Fprintf(&b, "\t\t%s\n", str(a))
	}
	b.WriteString("\t</array>\n")
	if len(u.Env) > 0 {
		b.WriteString("\t<key>EnvironmentVariables</key>\n\t<dict>\n")
		for _, kv := range u.Env {
			k, v, _ := strings.Cut(kv, "=")
			fmt.Fprintf(&b, "\t\t<key>%s</key>\n\t\t%s\n", xmlEscape(k), str(v))
		}
		b.WriteString("\t</dict>\n")
	}
	fmt.Fprintf(&b, "\t<key>StandardInPath</key>\n\t%s\n", str("/dev/null"))
	fmt.Fprintf(&b, "\t<key>StandardOutPath</key>\n\t%s\n\t<key>StandardErrorPath</key>\n\t%s\n", str(u.Log), str(u.Log))
	b.WriteString("\t<key>RunAtLoad</key>\n\t<true/>\n")
	b.WriteString("\t<!-- No automatic restart: poolc's observe reports a lane whose process is\n" +
		"\t     gone as drift, and the plan repairs it. -->\n\t<key>KeepAlive</key>\n\t<false/>\n")
	fmt.Fprintf(&b, "\t<key>ExitTimeOut</key>\n\t<integer>%d</integer>\n", int(math.Max(1, math.Ceil(u.StopGrace.Seconds()))))
	b.WriteString("</dict>\n</plist>\n")
	return b.String(), nil
}

// xmlText refuses a string XML 1.0 cannot hold, even as a character
// reference.
func xmlText(s string) error {
	for i, r := range s {
		ok := r == '\t' || r == '\n' || r == '\r' || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || r >= 0x10000
		if !ok || (r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD")) {
			return fmt.Errorf("%q holds a character a plist cannot hold (%U)", s, r)
		}
	}
	return nil
}

// xmlEscape escapes s as XML character data or attribute text, newlines,
// tabs and carriage returns as references so they survive as they are.
func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;",
		"\n", "&#xA;", "\t", "&#x9;", "\r", "&#xD;").Replace(s)
}

// scriptResolve makes state directory $1 and prints its absolute path,
// then that of executable $2 as the login's PATH finds it: a unit runs
// with the service manager's environment, not the login's, so it names
// both absolutely.
const scriptResolve = `set -e
mkdir -p "$1"
dir=$(cd "$1" && pwd -P)
bin=$(command -v "$2") || { echo "$2 is not on the PATH of this login" >&2; exit 127; }
case $bin in /*) ;; *) bin=$(pwd -P)/$bin ;; esac
printf '%s\n%s\n' "$dir" "$bin"
`

// parseResolve reads scriptResolve's answer.
func parseResolve(out string) (dir, bin string, err error) {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		return "", "", fmt.Errorf("resolving the state directory and llama-server: unexpected answer %q", out)
	}
	for _, p := range lines {
		if err := checkPath("resolved path", p); err != nil {
			return "", "", err
		}
	}
	return lines[0], lines[1], nil
}

// unitLog is the log of lane key under the absolute state directory dir.
func unitLog(dir, key string) string { return path.Join(dir, key+".log") }
