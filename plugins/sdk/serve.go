package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Serve serves impl to the poolc that started this process and returns
// only when poolc is done with it. Call it from main:
//
//	func main() { sdk.Serve(&myActuator{}) }
//
// It speaks gRPC only, with mutual TLS when poolc asks for it (poolc
// always does). Run by hand, without poolc's handshake, it says that it is
// a plugin and exits with status 1. It exits as well when poolc dies
// without stopping it, so a killed poolc leaves no plugin behind.
//
// Anything the plugin writes to stderr or stdout reaches poolc's output
// prefixed with the plugin's name; use it for logs.
func Serve(impl Actuator) {
	go exitWithParent(os.Getppid(), time.Second)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: &GRPCPlugin{Impl: impl}},
		GRPCServer:      grpcServer,
		Logger:          serverLogger(os.Stderr),
	})
}

// streamWorkers is how many goroutines of a plugin's gRPC server serve
// calls, each keeping the stack it has grown; a call that finds them all
// busy gets a goroutine of its own, as every call would without them. It
// covers poolc's default of ten steps in flight.
const streamWorkers = 16

// grpcServer is the plugin's gRPC server, with go-plugin's options (its
// TLS credentials), MaxMessageSize and stream workers.
func grpcServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(append(opts, serverOptions()...), grpc.NumStreamWorkers(streamWorkers))...)
}

// serverLogger is go-plugin's logger on the plugin side: errors only, as
// JSON lines, which poolc reads from the plugin's stderr.
func serverLogger(w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: w, JSONFormat: true})
}

// exitWithParent ends the process once its parent is no longer the
// process that started it: the parent died and the process was handed to
// init or a subreaper. It is the portable half of poolc's cleanup; on
// Linux the kernel also kills the plugin (Pdeathsig).
func exitWithParent(parent int, every time.Duration) {
	for range time.Tick(every) {
		if os.Getppid() != parent {
			os.Exit(1)
		}
	}
}

// ReattachEnv is the environment variable that points poolc at plugins
// already running for debugging, instead of starting them: a JSON object
// from plugin name to ReattachConfig. ServeDebug prints it.
const ReattachEnv = "POOLC_REATTACH_PLUGINS"

// ReattachConfig is how poolc reaches a plugin that is already running, the
// value of one entry of ReattachEnv:
//
//	{"Protocol":"grpc","ProtocolVersion":2,"Pid":4242,"Test":true,
//	 "Addr":{"Network":"unix","String":"/tmp/plugin1234"}}
//
// Test true means poolc must not stop the process when it is done: the
// plugin was started by someone else (a debugger) and stays up.
type ReattachConfig struct {
	Protocol        string
	ProtocolVersion int
	Pid             int
	Test            bool
	Addr            ReattachAddr
}

// ReattachAddr is the address a reattachable plugin listens on: Network
// "unix" with a socket path, or "tcp" with host:port.
type ReattachAddr struct {
	Network string
	String  string
}

// ServeDebug serves impl in this process for debugging, without a poolc
// to start it, until ctx is done. Once it listens it writes to out the
// line that tells poolc where to find it,
//
//	POOLC_REATTACH_PLUGINS='{"webhook":{...}}'
//
// to be set in the environment of a poolc run in another terminal. name is
// the plugin's name in the pool's configuration. The plugin can then run
// under a debugger, and survives poolc's runs.
func ServeDebug(ctx context.Context, name string, impl Actuator, out io.Writer) error {
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	go plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: &GRPCPlugin{Impl: impl}},
		GRPCServer:      grpcServer,
		Logger:          serverLogger(out),
		Test:            &plugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed},
	})
	select {
	case rc := <-reattach:
		line, err := json.Marshal(map[string]ReattachConfig{name: {
			Protocol:        string(rc.Protocol),
			ProtocolVersion: rc.ProtocolVersion,
			Pid:             rc.Pid,
			Test:            true,
			Addr:            ReattachAddr{Network: rc.Addr.Network(), String: rc.Addr.String()},
		}})
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(out, "%s='%s'\n", ReattachEnv, line); err != nil {
			return err
		}
	case <-closed:
		return fmt.Errorf("plugin %s stopped before it was ready", name)
	}
	<-closed
	return nil
}
