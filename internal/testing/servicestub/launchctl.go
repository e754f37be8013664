package servicestub

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LaunchctlMain runs the launchctl stand-in with the arguments after the
// program name and returns its exit status, as launchctl's. It
// implements bootstrap DOMAIN PLIST..., bootout SERVICE and print
// SERVICE in the gui/UID domain of the user running it, the agent's
// process started and stopped for real (SIGTERM on bootout, SIGKILL
// after ExitTimeOut). The domain's state, which launchd keeps, is kept in
// files under $HOME/.launchctl-standin.
func LaunchctlMain(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return exitStatus(launchctl(args, getenv, stdout), stderr)
}

// domain is the launchd domain of one user, as the stand-in keeps it.
type domain struct {
	name, state, home string
}

func launchctl(args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) < 2 {
		return fail(64, "Usage: launchctl <subcommand> ... (the stand-in implements bootstrap, bootout and print)")
	}
	home := getenv("HOME")
	d := domain{name: "gui/" + strconv.Itoa(os.Getuid()), state: filepath.Join(home, ".launchctl-standin"), home: home}
	if err := os.MkdirAll(d.state, 0o700); err != nil {
		return err
	}
	target := args[1]
	label, ok := strings.CutPrefix(target, d.name+"/")
	switch {
	case args[0] == "bootstrap" && target == d.name && len(args) > 2:
		for _, p := range args[2:] {
			if err := d.bootstrap(p, getenv); err != nil {
				return err
			}
		}
		return nil
	case args[0] == "bootout" && ok && len(args) == 2:
		return d.bootout(label)
	case args[0] == "print" && ok && len(args) == 2:
		return d.print(stdout, label)
	}
	return fail(1, "launchctl stand-in: %q is not implemented (only bootstrap %s PLIST, bootout and print %s/LABEL)", strings.Join(args, " "), d.name, d.name)
}

func (d domain) plistCopy(label string) string { return filepath.Join(d.state, label+".plist") }
func (d domain) pidFile(label string) string   { return filepath.Join(d.state, label+".pid") }

// loaded is the agent label as bootstrapped, with the path it came from.
func (d domain) loaded(label string) (Agent, string, bool) {
	b, err := os.ReadFile(d.plistCopy(label))
	if err != nil {
		return Agent{}, "", false
	}
	path, text, _ := strings.Cut(string(b), "\n")
	a, err := ParsePlist(text)
	return a, path, err == nil
}

// bootstrap loads the plist at path and, with RunAtLoad, starts its
// program with launchd's environment and the plist's. A plist that does
// not parse, or whose label is loaded already, fails as launchctl does.
func (d domain) bootstrap(path string, getenv func(string) string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fail(5, "Bootstrap failed: 5: Input/output error")
	}
	a, err := ParsePlist(string(b))
	if err != nil {
		return fail(5, "Bootstrap failed: 5: Input/output error\n(stand-in: %v)", err)
	}
	if _, _, ok := d.loaded(a.Label); ok {
		return fail(5, "Bootstrap failed: 5: Input/output error")
	}
	abs, _ := filepath.Abs(path)
	if err := os.WriteFile(d.plistCopy(a.Label), []byte(abs+"\n"+string(b)), 0o600); err != nil {
		return err
	}
	if !a.RunAtLoad {
		return nil
	}
	env := append([]string{"HOME=" + d.home, "PATH=/usr/bin:/bin:/usr/sbin:/sbin", "USER=" + getenv("USER")}, a.Env...)
	out := func(p string) Output {
		if p == "" {
			return Output{}
		}
		return Output{Path: p, Mode: "append"}
	}
	// A program that cannot run leaves the service loaded all the same,
	// not running, as launchd does: no error.
	_ = spawn(d.pidFile(a.Label), a.Program, env, "/", out(a.Stdout), out(a.Stderr))
	return nil
}

// bootout stops the agent (SIGTERM, SIGKILL after its ExitTimeOut) and
// unloads it.
func (d domain) bootout(label string) error {
	a, _, ok := d.loaded(label)
	if !ok {
		return fail(3, "Boot-out failed: 3: No such process")
	}
	if err := stopRecorded(d.pidFile(label), syscall.SIGTERM, false, a.ExitTimeOut, true, true); err != nil {
		return err
	}
	return os.Remove(d.plistCopy(label))
}

// print describes a loaded agent as launchctl print does, in part: its
// path, state, program and arguments, and "pid = N" while it runs.
func (d domain) print(w io.Writer, label string) error {
	a, path, ok := d.loaded(label)
	if !ok {
		return fail(113, "Bad request.\nCould not find service %q in domain for user gui: %d", label, os.Getuid())
	}
	pid := recorded(d.pidFile(label))
	state := "not running"
	if pid > 0 {
		state = "running"
	}
	fmt.Fprintf(w, "%s/%s = {\n\tactive count = %d\n\tpath = %s\n\ttype = LaunchAgent\n\tstate = %s\n\n\tprogram = %s\n\targuments = {\n",
		d.name, label, min(pid, 1), path, state, a.Program[0])
	for _, arg := range a.Program {
		fmt.Fprintf(w, "\t\t%s\n", arg)
	}
	fmt.Fprintf(w, "\t}\n\n\tstdout path = %s\n\tstderr path = %s\n", a.Stdout, a.Stderr)
	if pid > 0 {
		fmt.Fprintf(w, "\tpid = %d\n", pid)
	}
	fmt.Fprintln(w, "}")
	return nil
}
