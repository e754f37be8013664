package cli

import (
	"fmt"

	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/plugins/builtin"
	"poolc.dev/poolc/plugins/sdk"
)

const pluginServeHelp = `Serves a built-in actuator over the plugin protocol. poolc runs this
itself for each built-in plugin a pool declares; it is not meant to be run
by hand.`

func runPluginServe(a *arguments.PluginServe, io Stdio) int {
	if len(a.Args) != 1 {
		fmt.Fprintf(io.Err, "poolc plugin-serve: want one NAME, one of %v\n", builtin.Names())
		return ExitError
	}
	impl, ok := builtin.New(a.Args[0], Version())
	if !ok {
		fmt.Fprintf(io.Err, "poolc plugin-serve: no built-in actuator %q; built-ins: %v\n", a.Args[0], builtin.Names())
		return ExitError
	}
	sdk.Serve(impl)
	return ExitOK
}
