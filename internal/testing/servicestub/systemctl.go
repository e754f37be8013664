package servicestub

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// The stand-ins Build compiles.
const (
	// Systemctl is the stand-in for systemd's systemctl.
	Systemctl = "systemctl"
	// Launchctl is the stand-in for launchd's launchctl.
	Launchctl = "launchctl"
)

// Build compiles the stand-in name (Systemctl or Launchctl) into dir
// under that name and returns its path.
func Build(dir, name string) (string, error) {
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, "poolc.dev/poolc/internal/testing/servicestub/cmd/"+name)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the %s stand-in: %v\n%s", name, err, b)
	}
	return out, nil
}

// UnitDir is the directory a user manager reads unit files from, as
// getenv says: $XDG_CONFIG_HOME/systemd/user, else
// $HOME/.config/systemd/user.
func UnitDir(getenv func(string) string) string {
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "systemd", "user")
	}
	return filepath.Join(getenv("HOME"), ".config", "systemd", "user")
}

// exitError is a command's failure: its message (printed on stderr) and
// exit status.
type exitError struct {
	msg  string
	code int
}

func (e *exitError) Error() string { return e.msg }

func fail(code int, format string, args ...any) error {
	return &exitError{msg: fmt.Sprintf(format, args...), code: code}
}

// SystemctlMain runs the systemctl stand-in with the arguments after the
// program name and returns its exit status, as systemctl's.
func SystemctlMain(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return exitStatus(run(args, getenv, stdout, stderr), stderr)
}

// exitStatus prints a command's error on stderr and returns its status.
func exitStatus(err error, stderr io.Writer) int {
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintln(stderr, ee.msg)
		}
		return ee.code
	default:
		fmt.Fprintln(stderr, err)
		return 1
	}
}

// manager is the state of the user manager the stand-in stands for.
type manager struct {
	units, state string
	getenv       func(string) string
	stderr       io.Writer
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var user, quiet, value bool
	var props, words []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--user":
			user = true
		case a == "--quiet" || a == "-q":
			quiet = true
		case a == "--value":
			value = true
		case a == "--no-pager" || a == "--no-ask-password":
		case a == "-p" || a == "--property":
			if i+1 == len(args) {
				return fail(1, "option requires an argument -- 'p'")
			}
			i++
			props = append(props, strings.Split(args[i], ",")...)
		case strings.HasPrefix(a, "--property="):
			props = append(props, strings.Split(strings.TrimPrefix(a, "--property="), ",")...)
		case strings.HasPrefix(a, "-"):
			return fail(1, "systemctl stand-in: option %s is not implemented", a)
		default:
			words = append(words, a)
		}
	}
	if !user {
		return fail(1, "systemctl stand-in: only --user (a user manager) is implemented")
	}
	rt := getenv("XDG_RUNTIME_DIR")
	if rt == "" {
		return fail(1, "Failed to connect to bus: $DBUS_SESSION_BUS_ADDRESS and $XDG_RUNTIME_DIR not defined (consider using --machine=<user>@.host --user to connect to bus of other user)")
	}
	if len(words) == 0 {
		return fail(1, "systemctl stand-in: listing units is not implemented")
	}
	m := &manager{units: UnitDir(getenv), state: filepath.Join(rt, "systemctl-standin"), getenv: getenv, stderr: stderr}
	if err := os.MkdirAll(m.state, 0o700); err != nil {
		return err
	}
	verb, names := words[0], words[1:]
	for i, n := range names {
		if !strings.Contains(n, ".") {
			names[i] = n + ".service"
		}
	}
	needUnits := func() error {
		if len(names) == 0 {
			return fail(1, "Too few arguments.")
		}
		return nil
	}
	switch verb {
	case "daemon-reload":
		return m.reload()
	case "start", "stop":
		if err := needUnits(); err != nil {
			return err
		}
		for _, n := range names {
			var err error
			if verb == "start" {
				err = m.start(n)
			} else {
				err = m.stop(n)
			}
			if err != nil {
				return err
			}
		}
		return nil
	case "is-active":
		if err := needUnits(); err != nil {
			return err
		}
		code := 3
		for _, n := range names {
			st := "inactive"
			if m.mainPID(n) > 0 {
				st, code = "active", 0
			}
			if !quiet {
				fmt.Fprintln(stdout, st)
			}
		}
		if code != 0 {
			return fail(code, "")
		}
		return nil
	case "show":
		if err := needUnits(); err != nil {
			return err
		}
		return m.show(stdout, names, props, value)
	}
	return fail(1, "systemctl stand-in: command %q is not implemented", verb)
}

// loaded is the unit text the manager loaded for name, if any.
func (m *manager) loaded(name string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(m.state, "loaded", name))
	return string(b), err == nil
}

// reload loads every unit file anew and unloads units whose file is gone
// and that do not run.
func (m *manager) reload() error {
	dir := filepath.Join(m.state, "loaded")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	files, _ := os.ReadDir(m.units)
	present := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(m.units, f.Name()))
		if err != nil || !strings.HasSuffix(f.Name(), ".service") {
			continue
		}
		present[f.Name()] = true
		if err := os.WriteFile(filepath.Join(dir, f.Name()), b, 0o600); err != nil {
			return err
		}
	}
	old, _ := os.ReadDir(dir)
	for _, f := range old {
		if !present[f.Name()] && m.mainPID(f.Name()) == 0 {
			os.Remove(filepath.Join(dir, f.Name()))
		}
	}
	return nil
}

// unit is the loaded unit name, parsed; a unit never loaded is loaded
// from its file now, as systemd loads a unit on its first reference.
func (m *manager) unit(name, verb string) (Unit, error) {
	text, ok := m.loaded(name)
	file, ferr := os.ReadFile(filepath.Join(m.units, name))
	switch {
	case !ok && ferr != nil:
		return Unit{}, fail(5, "Failed to %s %s: Unit %s not found.", verb, name, name)
	case !ok:
		text = string(file)
		if err := os.MkdirAll(filepath.Join(m.state, "loaded"), 0o700); err != nil {
			return Unit{}, err
		}
		if err := os.WriteFile(filepath.Join(m.state, "loaded", name), file, 0o600); err != nil {
			return Unit{}, err
		}
	case ferr == nil && string(file) != text:
		fmt.Fprintf(m.stderr, "Warning: The unit file, source configuration file or drop-ins of %s changed on disk. Run 'systemctl --user daemon-reload' to reload units.\n", name)
	}
	home := m.getenv("HOME")
	who := ""
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	u, err := ParseUnit(text, Specifiers{Home: home, Unit: name, User: who})
	if err != nil {
		return Unit{}, fail(1, "Failed to %s %s: Unit %s has a bad unit file setting: %v", verb, name, name, err)
	}
	return u, nil
}

// pidFile records a running unit's main process.
func (m *manager) pidFile(name string) string { return filepath.Join(m.state, name+".pid") }

// mainPID is the unit's main process, 0 when it has none.
func (m *manager) mainPID(name string) int { return recorded(m.pidFile(name)) }

// start runs the unit's ExecStart detached in a session of its own, as
// the manager's child would be, with the manager's environment (not the
// caller's) and the unit's; an active unit is left as it is. Like
// Type=exec, it fails when the executable cannot be run.
func (m *manager) start(name string) error {
	u, err := m.unit(name, "start")
	if err != nil {
		return err
	}
	if m.mainPID(name) > 0 {
		return nil
	}
	env := append([]string{"HOME=" + m.getenv("HOME"), "PATH=/usr/local/bin:/usr/bin:/bin", "XDG_RUNTIME_DIR=" + m.getenv("XDG_RUNTIME_DIR")}, u.Env...)
	err = spawn(m.pidFile(name), Substitute(u.Exec, env), env, m.getenv("HOME"), u.Stdout, u.Stderr)
	switch {
	case errors.Is(err, errExec):
		return fail(1, "Job for %s failed because the control process exited with error code.\nSee \"systemctl --user status %s\" and \"journalctl --user -xeu %s\" for details.", name, name, name)
	case err != nil:
		return fail(1, "Job for %s failed because of unavailable resources or another system error.", name)
	}
	return nil
}

// stop sends the unit's KillSignal (to the main process, or with
// KillMode=control-group to its whole group), waits TimeoutStopSec, then
// sends SIGKILL to the group (to the main process alone with
// KillMode=process) and waits until it is gone. An inactive unit is left
// as it is; a unit neither loaded nor with a file is an error.
func (m *manager) stop(name string) error {
	if _, ok := m.loaded(name); !ok {
		if _, err := os.Stat(filepath.Join(m.units, name)); err != nil {
			return fail(5, "Failed to stop %s: Unit %s not loaded.", name, name)
		}
	}
	if m.mainPID(name) == 0 {
		return stopRecorded(m.pidFile(name), 0, false, 0, false, false)
	}
	u, err := m.unit(name, "stop")
	if err != nil {
		return err
	}
	return stopRecorded(m.pidFile(name), u.KillSignal, u.KillMode == "control-group", u.TimeoutStop, u.SendSIGKILL, u.KillMode != "process")
}

// show prints the properties asked for (MainPID and ActiveState), as
// NAME=VALUE or, with --value, the value alone. An unknown unit has
// MainPID 0 and is inactive, as systemd says.
func (m *manager) show(w io.Writer, names, props []string, value bool) error {
	if len(props) == 0 {
		return fail(1, "systemctl stand-in: show without -p is not implemented")
	}
	for _, n := range names {
		pid := m.mainPID(n)
		for _, p := range props {
			var v string
			switch p {
			case "MainPID":
				v = strconv.Itoa(pid)
			case "ActiveState":
				v = "inactive"
				if pid > 0 {
					v = "active"
				}
			default:
				return fail(1, "systemctl stand-in: property %s is not implemented", p)
			}
			if value {
				fmt.Fprintln(w, v)
			} else {
				fmt.Fprintf(w, "%s=%s\n", p, v)
			}
		}
	}
	return nil
}
