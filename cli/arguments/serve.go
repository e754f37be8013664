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
	none
	// Args should be one built-in actuator's name; the command refuses
	// anything else, naming the built-ins.
	Args []string
}

// Positional keeps the arguments for the command to check.
func (a *PluginServe) Positional(args []string, _ int) error {
	a.Args = args
	return nil
}
