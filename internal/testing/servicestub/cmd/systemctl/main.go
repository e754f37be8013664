// Command systemctl is the `systemctl --user` stand-in of package
// servicestub. Tests install it as "systemctl" first on PATH, on machines
// where no systemd user manager runs.
package main

import (
	"os"

	"poolc.dev/poolc/internal/testing/servicestub"
)

func main() {
	os.Exit(servicestub.SystemctlMain(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
