// Package servicestub stands in for the service managers poolc's llama
// actuator drives, on machines that have none (containers, CI):
// `systemctl --user` (SystemctlMain) and launchctl in the gui/UID domain
// (LaunchctlMain), each answering the commands poolc runs as the real
// one does, from the unit files and plists where the real one reads
// them, with the services' processes started and stopped for real.
// Tests build them (Build) and put them first on PATH.
//
// The systemctl stand-in implements daemon-reload, start, stop,
// is-active and show -p MainPID|ActiveState [--value] for services of
// Type=simple or exec with Restart=no: ExecStart (systemd's quoting, C
// escapes, specifiers %%, %h, %n, %u, and $$, ${NAME} and $NAME
// substitution), Environment=, StandardOutput= and StandardError=
// (append:, file:, truncate:, null), KillSignal=, KillMode=,
// TimeoutStopSec= and SendSIGKILL=. Its state, which systemd keeps in
// the manager, is kept in files under $XDG_RUNTIME_DIR; a unit whose
// process ended is inactive, since the stand-in is not its parent and
// sees no exit status (systemd would say failed after a SIGKILL).
//
// The launchctl stand-in implements bootstrap, bootout and print for
// the plist keys ParsePlist reads.
package servicestub

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Unit is what the stand-in reads of a service unit file.
type Unit struct {
	// Exec is the ExecStart argv, specifiers expanded, not yet
	// substituted from the environment.
	Exec []string
	// Env is Environment=, "NAME=value" in order.
	Env []string
	// Stdout and Stderr are the file the output goes to, "" for none,
	// and whether it is appended to, truncated or written from the start.
	Stdout, Stderr Output
	// KillSignal is sent to the main process on stop; TimeoutStop is how
	// long it has before SIGKILL (if SendSIGKILL); KillMode says who
	// gets which.
	KillSignal  syscall.Signal
	KillMode    string
	TimeoutStop time.Duration
	SendSIGKILL bool
}

// Output is a StandardOutput= or StandardError= file.
type Output struct {
	Path string
	Mode string // "append", "truncate" or "file"
}

// Specifiers are the values of the % specifiers the stand-in expands.
type Specifiers struct {
	Home, Unit, User string
}

// DefaultTimeoutStop is systemd's DefaultTimeoutStopSec.
const DefaultTimeoutStop = 90 * time.Second

// ParseUnit reads a service unit file as systemd does for the settings
// the stand-in knows; a setting it does not implement is an error rather
// than ignored.
func ParseUnit(text string, sp Specifiers) (Unit, error) {
	u := Unit{KillSignal: syscall.SIGTERM, KillMode: "control-group", TimeoutStop: DefaultTimeoutStop, SendSIGKILL: true}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		// A backslash at the end of a line continues it.
		for strings.HasSuffix(line, `\`) && sc.Scan() {
			n++
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(sc.Text())
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' && line[len(line)-1] == ']' {
			section = line[1 : len(line)-1]
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return u, fmt.Errorf("line %d: %q is not KEY=VALUE", n, line)
		}
		key = strings.TrimSpace(key)
		value, err := expand(strings.TrimSpace(value), sp)
		if err == nil {
			err = u.set(section, key, value)
		}
		if err != nil {
			return u, fmt.Errorf("line %d: %s=: %w", n, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return u, err
	}
	if len(u.Exec) == 0 {
		return u, fmt.Errorf("service has no ExecStart= setting")
	}
	return u, nil
}

// set takes one setting, its specifiers expanded.
func (u *Unit) set(section, key, value string) error {
	switch section + "." + key {
	case "Unit.Description", "Service.StandardInput":
		if key == "StandardInput" && value != "null" {
			return fmt.Errorf("only null is implemented")
		}
		return nil
	case "Service.Type":
		if value != "simple" && value != "exec" {
			return fmt.Errorf("type %q is not implemented", value)
		}
	case "Service.Restart":
		if value != "no" {
			return fmt.Errorf("%q is not implemented (only no)", value)
		}
	case "Service.ExecStart":
		cmds, err := SplitExec(value)
		if err != nil {
			return err
		}
		if len(cmds) != 1 {
			return fmt.Errorf("a service that is not Type=oneshot takes exactly one command, not %d", len(cmds))
		}
		if !strings.HasPrefix(cmds[0][0], "/") {
			return fmt.Errorf("executable %q is not an absolute path", cmds[0][0])
		}
		u.Exec = cmds[0]
	case "Service.Environment":
		words, err := splitWords(value)
		if err != nil {
			return err
		}
		for _, w := range words {
			if k, _, ok := strings.Cut(w, "="); !ok || k == "" {
				return fmt.Errorf("%q is not NAME=value", w)
			}
		}
		u.Env = append(u.Env, words...)
	case "Service.StandardOutput", "Service.StandardError":
		o := Output{}
		if value != "null" {
			mode, p, ok := strings.Cut(value, ":")
			if !ok || (mode != "append" && mode != "truncate" && mode != "file") || !strings.HasPrefix(p, "/") {
				return fmt.Errorf("%q is not implemented (null, or append:, truncate: or file: an absolute path)", value)
			}
			o = Output{Path: p, Mode: mode}
		}
		if key == "StandardOutput" {
			u.Stdout = o
		} else {
			u.Stderr = o
		}
	case "Service.KillSignal":
		s, ok := signals[value]
		if !ok {
			return fmt.Errorf("signal %q is not implemented", value)
		}
		u.KillSignal = s
	case "Service.KillMode":
		if value != "control-group" && value != "mixed" && value != "process" {
			return fmt.Errorf("%q is not implemented", value)
		}
		u.KillMode = value
	case "Service.TimeoutStopSec":
		d, err := parseTimespan(value)
		if err != nil {
			return err
		}
		u.TimeoutStop = d
	case "Service.SendSIGKILL":
		b, err := parseBool(value)
		if err != nil {
			return err
		}
		u.SendSIGKILL = b
	default:
		return fmt.Errorf("not implemented by the stand-in (section [%s])", section)
	}
	return nil
}

var signals = map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT, "SIGHUP": syscall.SIGHUP,
	"SIGKILL": syscall.SIGKILL, "SIGQUIT": syscall.SIGQUIT, "SIGUSR1": syscall.SIGUSR1, "SIGUSR2": syscall.SIGUSR2}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "1", "yes", "y", "true", "t", "on":
		return true, nil
	case "0", "no", "n", "false", "f", "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean", s)
}

// parseTimespan reads a systemd time span: a bare number is seconds,
// else numbers with units (us, ms, s, min, h), summed; "infinity".
func parseTimespan(s string) (time.Duration, error) {
	if s == "infinity" {
		return 1<<63 - 1, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 {
		return time.Duration(f * float64(time.Second)), nil
	}
	units := []struct {
		suffix string
		d      time.Duration
	}{{"usec", time.Microsecond}, {"us", time.Microsecond}, {"msec", time.Millisecond}, {"ms", time.Millisecond},
		{"min", time.Minute}, {"sec", time.Second}, {"s", time.Second}, {"h", time.Hour}}
	var total time.Duration
	for _, part := range strings.Fields(s) {
		matched := false
		for _, u := range units {
			if num, ok := strings.CutSuffix(part, u.suffix); ok && num != "" {
				f, err := strconv.ParseFloat(num, 64)
				if err != nil || f < 0 {
					return 0, fmt.Errorf("time span %q", s)
				}
				total += time.Duration(f * float64(u.d))
				matched = true
				break
			}
		}
		if !matched {
			return 0, fmt.Errorf("time span %q", s)
		}
	}
	if total == 0 && strings.TrimSpace(s) == "" {
		return 0, fmt.Errorf("empty time span")
	}
	return total, nil
}

// expand replaces the % specifiers of a setting's value.
func expand(s string, sp Specifiers) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return "", fmt.Errorf("%q ends in a lone %%", s)
		}
		i++
		switch s[i] {
		case '%':
			b.WriteByte('%')
		case 'h':
			b.WriteString(sp.Home)
		case 'n':
			b.WriteString(sp.Unit)
		case 'u':
			b.WriteString(sp.User)
		default:
			return "", fmt.Errorf("specifier %%%c is not implemented by the stand-in", s[i])
		}
	}
	return b.String(), nil
}

// SplitExec splits an ExecStart= value (specifiers already expanded)
// into its command lines as systemd does: words separated by whitespace,
// each optionally in double or single quotes, C escapes in and out of
// quotes, a lone ";" separating commands (empty ones dropped) and "\;"
// a literal ";".
func SplitExec(s string) ([][]string, error) {
	var cmds [][]string
	var cur []string
	for {
		s = strings.TrimLeft(s, " \t\n")
		if s == "" {
			break
		}
		if strings.HasPrefix(s, `\;`) && (len(s) == 2 || isSpace(s[2])) {
			cur = append(cur, ";")
			s = s[2:]
			continue
		}
		if s[0] == ';' && (len(s) == 1 || isSpace(s[1])) {
			if len(cur) > 0 {
				cmds = append(cmds, cur)
			}
			cur = nil
			s = s[1:]
			continue
		}
		w, rest, err := nextWord(s)
		if err != nil {
			return nil, err
		}
		cur = append(cur, w)
		s = rest
	}
	if len(cur) > 0 {
		cmds = append(cmds, cur)
	}
	return cmds, nil
}

func splitWords(s string) ([]string, error) {
	var out []string
	for {
		s = strings.TrimLeft(s, " \t\n")
		if s == "" {
			return out, nil
		}
		w, rest, err := nextWord(s)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
		s = rest
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }

// nextWord reads one word from the start of s (no leading space): quoted
// parts and C escapes undone. It returns the rest after the word.
func nextWord(s string) (string, string, error) {
	var b strings.Builder
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == 0 && isSpace(c):
			return b.String(), s[i:], nil
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote != 0 && c == quote:
			quote = 0
		case c == '\\':
			r, n, err := unescape(s[i+1:])
			if err != nil {
				return "", "", err
			}
			b.WriteString(r)
			i += n
		default:
			b.WriteByte(c)
		}
	}
	if quote != 0 {
		return "", "", fmt.Errorf("unbalanced quotes in %q", s)
	}
	return b.String(), "", nil
}

// unescape reads the C escape after a backslash, returning its text and
// how many bytes it took.
func unescape(s string) (string, int, error) {
	if s == "" {
		return "", 0, fmt.Errorf("a backslash at the end")
	}
	simple := map[byte]string{'a': "\a", 'b': "\b", 'f': "\f", 'n': "\n", 'r': "\r", 't': "\t", 'v': "\v",
		'\\': `\`, '"': `"`, '\'': "'", 's': " "}
	if r, ok := simple[s[0]]; ok {
		return r, 1, nil
	}
	if s[0] == 'x' && len(s) >= 3 {
		v, err := strconv.ParseUint(s[1:3], 16, 8)
		if err == nil && v != 0 {
			return string([]byte{byte(v)}), 3, nil
		}
	}
	if len(s) >= 3 && s[0] >= '0' && s[0] <= '7' {
		v, err := strconv.ParseUint(s[:3], 8, 8)
		if err == nil && v != 0 {
			return string([]byte{byte(v)}), 3, nil
		}
	}
	return "", 0, fmt.Errorf("invalid escape \\%c", s[0])
}

// Substitute replaces environment variables in an ExecStart argv as
// systemd does when it runs it: "$$" is "$", "${NAME}" the value
// anywhere in a word, a word "$NAME" the value split at whitespace;
// unset variables are empty.
func Substitute(argv []string, env []string) []string {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	var out []string
	for i, a := range argv {
		if i > 0 && len(a) > 1 && a[0] == '$' && isName(a[1:]) {
			out = append(out, strings.Fields(vars[a[1:]])...)
			continue
		}
		var b strings.Builder
		for j := 0; j < len(a); j++ {
			switch {
			case strings.HasPrefix(a[j:], "$$"):
				b.WriteByte('$')
				j++
			case strings.HasPrefix(a[j:], "${"):
				end := strings.IndexByte(a[j:], '}')
				if end > 2 && isName(a[j+2:j+end]) {
					b.WriteString(vars[a[j+2:j+end]])
					j += end
					continue
				}
				b.WriteByte('$')
			default:
				b.WriteByte(a[j])
			}
		}
		out = append(out, b.String())
	}
	return out
}

func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}
