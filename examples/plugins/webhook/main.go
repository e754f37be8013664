// Command poolc-plugin-webhook is an example third-party actuator for
// poolc: it hands every step of a plan to an HTTP endpoint, as a POST of
// the step's JSON, and reports what the endpoint answered.
//
// It is written with poolc.dev/poolc/plugins/sdk only. See README.md for
// building it, putting it on poolc's plugin path and pinning it.
//
// Run with -debug to serve it for a debugger until interrupted; it prints
// the POOLC_REATTACH_PLUGINS value that points poolc at it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"poolc.dev/poolc/plugins/sdk"
)

func main() {
	debug := flag.Bool("debug", false, "serve for a debugger and print "+sdk.ReattachEnv+" instead of waiting for poolc to start the plugin")
	flag.Parse()
	if *debug {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := sdk.ServeDebug(ctx, "webhook", &Webhook{}, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "webhook:", err)
			os.Exit(1)
		}
		return
	}
	sdk.Serve(&Webhook{})
}
