// Command poolc compiles pool descriptions (CUE or HCL) into validated
// fleets; see `poolc --help`.
package main

import (
	"os"

	"poolc.dev/poolc/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})) }
