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
		return fail(io, "plugin-serve", fmt.Sprintf("want one NAME, one of %v", builtin.Names()))
	}
	impl, ok := builtin.New(a.Args[0], Version())
	if !ok {
		return fail(io, "plugin-serve", fmt.Sprintf("no built-in actuator %q; built-ins: %v", a.Args[0], builtin.Names()))
	}
	sdk.Serve(impl)
	return ExitOK
}
