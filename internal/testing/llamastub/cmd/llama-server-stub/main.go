// Command llama-server-stub is the llama-server stand-in of package
// llamastub. Tests install it as "llama-server" on a node's PATH; it takes
// llama-server's flags and is tuned with the LLAMASTUB_* environment
// variables.
package main

import (
	"os"
	"os/signal"
	"syscall"

	"poolc.dev/poolc/internal/testing/llamastub"
)

func main() {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	os.Exit(llamastub.Run(os.Args[1:], os.Getenv, os.Stderr, sig))
}
