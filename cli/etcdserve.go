package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"poolc.dev/poolc/cli/arguments"
)

// etcdMember is the program that runs etcd serve's member (cmd/poolc-etcd).
// It is apart from poolc so that poolc does not link the etcd server,
// whose packages every command would initialise at start-up.
const etcdMember = "poolc-etcd"

const etcdServeHelp = `Runs one etcd member on loopback, until stopped (Ctrl-C, SIGTERM),
keeping its data in --data-dir: enough to try the etcd state backend and
node membership on one machine without installing etcd. Point a pool at
it with

  state {
    backend   = "etcd"
    endpoints = ["127.0.0.1:2379"]
  }

Started again on the same --data-dir, it serves what it held. It has no
TLS and no authentication, and one member keeps no copy elsewhere: for a
team, run a cluster of three or five etcd members on separate machines
(see the README, "A team store on etcd").

The member is the program poolc-etcd, found beside poolc or on PATH
(go install ./cmd/poolc-etcd, from poolc's checkout); poolc checks the
flags and becomes it.

Examples:
  poolc etcd serve --data-dir ~/.poolc-etcd &
  poolc state push poolc.state.json pools/

Exit codes: 0 stopped by a signal, 1 it could not start.`

func runEtcdServe(a *arguments.EtcdServe, io Stdio) int {
	err := func() error {
		if _, _, err := a.URLs(); err != nil {
			return err
		}
		member, err := findEtcdMember()
		if err != nil {
			return err
		}
		// On success Exec does not return: the member has poolc's process,
		// its standard streams, signals and exit code.
		err = syscall.Exec(member, append([]string{etcdMember}, a.MemberArgs()...), os.Environ())
		return fmt.Errorf("running %s: %w", member, err)
	}()
	return fail(io, "etcd serve", err.Error())
}

// findEtcdMember is the path of the member program: beside poolc's own
// executable, as go install puts them, or else on PATH.
func findEtcdMember() (string, error) {
	self, err := os.Executable()
	if err == nil {
		if self, err = filepath.EvalSymlinks(self); err == nil {
			beside := filepath.Join(filepath.Dir(self), etcdMember)
			if st, err := os.Stat(beside); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				return beside, nil
			}
		}
	}
	if onPath, err := exec.LookPath(etcdMember); err == nil {
		return onPath, nil
	}
	dir := "poolc's directory"
	if self != "" {
		dir = filepath.Dir(self)
	}
	return "", fmt.Errorf("%s runs the member, and it is neither in %s nor on PATH: install it with go install ./cmd/%s from poolc's checkout", etcdMember, dir, etcdMember)
}
