// Command poolc-etcd runs the one etcd member of poolc etcd serve, which
// checks its flags and becomes this program; see `poolc etcd serve
// --help`. It takes the same flags. It is a program of its own so that
// poolc does not link the etcd server (internal/etcdlocal), whose packages
// every poolc command would otherwise initialise at start-up.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/cli/views"
	"poolc.dev/poolc/internal/etcdlocal"
)

// startLimit is how long the member may take to become ready.
const startLimit = time.Minute

func main() {
	if err := serve(os.Args[1:]); err != nil {
		views.Failure(os.Stderr, "etcd serve", err.Error())
		os.Exit(1)
	}
}

// serve runs the member that args describe until SIGINT or SIGTERM.
func serve(args []string) error {
	var a arguments.EtcdServe
	fs := arguments.FlagSet("etcd serve", &a)
	if err := arguments.Parse(fs, &a, args); err != nil {
		return fmt.Errorf("%v (run 'poolc etcd serve --help' for usage)", err)
	}
	client, peer, err := a.URLs()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e, err := etcdlocal.Member{Name: "poolc", Dir: a.DataDir, Client: client, Peer: peer,
		InitialCluster: "poolc=" + peer.String(), Token: "poolc-etcd-serve"}.Start(startLimit)
	if err != nil {
		return err
	}
	defer e.Close()
	views.EtcdServing(os.Stdout, a.Listen, a.DataDir)
	select {
	case <-ctx.Done():
		return nil
	case err := <-e.Err():
		return fmt.Errorf("etcd stopped: %w", err)
	}
}
