package cli

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/cli/views"
	"poolc.dev/poolc/internal/etcdlocal"
)

// loopback checks that addr is host:port on a loopback address: the
// member poolc runs has neither TLS nor authentication.
func loopback(flag, addr string) (url.URL, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return url.URL{}, fmt.Errorf("--%s %q: want HOST:PORT: %v", flag, addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return url.URL{}, fmt.Errorf("--%s %q: this member has no TLS and no authentication, so it listens on loopback only (127.0.0.1, ::1); for a team, run an etcd cluster", flag, addr)
	}
	return url.URL{Scheme: "http", Host: addr}, nil
}

const etcdServeHelp = `Runs one etcd member inside poolc, on loopback, until stopped (Ctrl-C,
SIGTERM), keeping its data in --data-dir: enough to try the etcd state
backend and node membership on one machine without installing etcd. Point
a pool at it with

  state {
    backend   = "etcd"
    endpoints = ["127.0.0.1:2379"]
  }

Started again on the same --data-dir, it serves what it held. It has no
TLS and no authentication, and one member keeps no copy elsewhere: for a
team, run a cluster of three or five etcd members on separate machines
(see the README, "A team store on etcd").

Examples:
  poolc etcd serve --data-dir ~/.poolc-etcd &
  poolc state push poolc.state.json pools/

Exit codes: 0 stopped by a signal, 1 it could not start.`

func runEtcdServe(a *arguments.EtcdServe, io Stdio) int {
	err := func() error {
		if len(a.Args) > 0 {
			return fmt.Errorf("no arguments expected, got %q", a.Args)
		}
		client, err := loopback("listen", a.Listen)
		if err != nil {
			return err
		}
		peerURL, err := loopback("listen-peer", a.ListenPeer)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		e, err := etcdlocal.Member{Name: "poolc", Dir: a.DataDir, Client: client, Peer: peerURL,
			InitialCluster: "poolc=" + peerURL.String(), Token: "poolc-etcd-serve"}.Start(time.Minute)
		if err != nil {
			return err
		}
		defer e.Close()
		views.EtcdServing(io.Out, a.Listen, a.DataDir)
		select {
		case <-ctx.Done():
			return nil
		case err := <-e.Err():
			return fmt.Errorf("etcd stopped: %w", err)
		}
	}()
	if err != nil {
		return fail(io, "etcd serve", err.Error())
	}
	return ExitOK
}
