package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/plugins/builtin"
	"poolc.dev/poolc/plugins/sdk"
)

const pluginServeHelp = `Serves a built-in actuator over the plugin protocol. poolc runs this
itself for each built-in plugin a pool declares; it is not meant to be run
by hand, except with --debug.

With --debug the actuator serves in this process until interrupted
(Ctrl-C, SIGTERM), for a debugger, and the first line on standard output
is the POOLC_REATTACH_PLUGINS setting that points poolc at it, as a
plugin built on the SDK prints with sdk.ServeDebug. Set it in another
terminal and poolc plan, apply and validate use that process for the
plugin NAME instead of starting one (see docs/PLUGINS.md, "Debugging:
reattach"). A reattached plugin's sha256 is not checked.

Examples:
  dlv exec "$(command -v poolc)" -- plugin-serve llama --debug
  poolc plugin-serve sim --debug     # prints POOLC_REATTACH_PLUGINS='{"sim":{...}}'

Exit codes: 0 stopped by a signal (--debug), 1 no such built-in or an
error.`

func runPluginServe(a *arguments.PluginServe, io Stdio) int {
	if len(a.Args) != 1 {
		return fail(io, "plugin-serve", fmt.Sprintf("want one NAME, one of %v", builtin.Names()))
	}
	name := a.Args[0]
	impl, ok := builtin.New(name, Version())
	if !ok {
		return fail(io, "plugin-serve", fmt.Sprintf("no built-in actuator %q; built-ins: %v", name, builtin.Names()))
	}
	if !a.Debug {
		sdk.Serve(impl)
		return ExitOK
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := sdk.ServeDebug(ctx, name, impl, io.Out); err != nil {
		return fail(io, "plugin-serve", err.Error())
	}
	return ExitOK
}
