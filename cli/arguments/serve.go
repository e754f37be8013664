package arguments

import (
	"fmt"
	"net"
	"net/url"

	"github.com/spf13/pflag"
)

// EtcdServe is poolc etcd serve, and the member program it runs
// (cmd/poolc-etcd), which takes the same flags.
type EtcdServe struct {
	// Args are what follows the flags: none is expected (the command
	// refuses them, without a usage line).
	Args                        []string
	DataDir, Listen, ListenPeer string
}

// Flags declares etcd serve's flags.
func (a *EtcdServe) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&a.DataDir, "data-dir", "poolc-etcd", "where the member keeps its data")
	fs.StringVar(&a.Listen, "listen", "127.0.0.1:2379", "where clients reach it (loopback only)")
	fs.StringVar(&a.ListenPeer, "listen-peer", "127.0.0.1:2380", "its peer address (loopback only; no other member uses it)")
}

// Positional keeps the arguments for the command to refuse.
func (a *EtcdServe) Positional(args []string, _ int) error {
	a.Args = args
	return nil
}

// URLs checks the arguments and returns the member's client and peer
// URLs: no positional argument, and both addresses HOST:PORT on loopback,
// as the member has neither TLS nor authentication.
func (a *EtcdServe) URLs() (client, peer url.URL, err error) {
	if len(a.Args) > 0 {
		return url.URL{}, url.URL{}, fmt.Errorf("no arguments expected, got %q", a.Args)
	}
	if client, err = loopback("listen", a.Listen); err != nil {
		return url.URL{}, url.URL{}, err
	}
	if peer, err = loopback("listen-peer", a.ListenPeer); err != nil {
		return url.URL{}, url.URL{}, err
	}
	return client, peer, nil
}

// MemberArgs are the flags that give the member program these arguments.
func (a *EtcdServe) MemberArgs() []string {
	return []string{"--data-dir", a.DataDir, "--listen", a.Listen, "--listen-peer", a.ListenPeer}
}

// loopback checks that addr is host:port on a loopback address.
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

// PluginServe is poolc plugin-serve NAME.
type PluginServe struct {
	// Args should be one built-in actuator's name; the command refuses
	// anything else, naming the built-ins.
	Args []string
	// Debug serves the actuator for a debugger, printing the
	// POOLC_REATTACH_PLUGINS line that points poolc at it, instead of
	// serving the poolc process that started it.
	Debug bool
}

// Flags declares plugin-serve's flags.
func (a *PluginServe) Flags(fs *pflag.FlagSet) {
	fs.BoolVar(&a.Debug, "debug", false, "serve for a debugger until interrupted, printing the POOLC_REATTACH_PLUGINS line to point poolc at it")
}

// Positional keeps the arguments for the command to check.
func (a *PluginServe) Positional(args []string, _ int) error {
	a.Args = args
	return nil
}
