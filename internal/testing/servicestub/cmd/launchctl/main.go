// Command launchctl is the launchctl stand-in of package servicestub.
// Tests install it as "launchctl" first on PATH, on machines without
// launchd.
package main

import (
	"os"

	"poolc.dev/poolc/internal/testing/servicestub"
)

func main() {
	os.Exit(servicestub.LaunchctlMain(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
