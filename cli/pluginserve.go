package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"poolc.dev/poolc/plugins/builtin"
	"poolc.dev/poolc/plugins/sdk"
)

func init() {
	register(&command{
		name: "plugin-serve",
		args: "NAME",
		help: `Serves a built-in actuator over the plugin protocol. poolc runs this
itself for each built-in plugin a pool declares; it is not meant to be run
by hand.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			return func(args []string, io Stdio) int {
				if len(args) != 1 {
					fmt.Fprintf(io.Err, "poolc plugin-serve: want one NAME, one of %v\n", builtin.Names())
					return ExitError
				}
				impl, ok := builtin.New(args[0], Version())
				if !ok {
					fmt.Fprintf(io.Err, "poolc plugin-serve: no built-in actuator %q; built-ins: %v\n", args[0], builtin.Names())
					return ExitError
				}
				sdk.Serve(impl)
				return ExitOK
			}
		},
	})
}
