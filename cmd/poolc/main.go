// Command poolc compiles pool descriptions (CUE or HCL) into validated
// fleets; see `poolc --help`. POOLC_CPUPROFILE and POOLC_MEMPROFILE name
// files for a CPU and a heap profile of the command (internal/profiling).
package main

import (
	"fmt"
	"os"

	"poolc.dev/poolc/cli"
	"poolc.dev/poolc/internal/profiling"
)

func main() {
	stop := profiling.Start(func(err error) { fmt.Fprintln(os.Stderr, "poolc: warning:", err) })
	code := cli.Main(os.Args[1:], cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
