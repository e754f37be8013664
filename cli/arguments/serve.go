package arguments

import (
	"github.com/spf13/pflag"
)

// EtcdServe is poolc etcd serve.
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
