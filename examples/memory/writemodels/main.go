// Command writemodels writes the GGUF files the pools in examples/memory
// read their headers from: files of the full size of the models they
// describe, sparse (the tensor data is zeros and takes no disk), so the
// examples need no download. Their sources point at
// /tmp/poolc-example-models:
//
//	go run ./examples/memory/writemodels
//	poolc validate -v examples/memory/estimated
package main

import (
	"fmt"
	"os"

	"poolc.dev/poolc/internal/testing/gguftest"
)

func main() {
	if err := gguftest.WriteExamples(gguftest.ExampleDir); err != nil {
		fmt.Fprintln(os.Stderr, "writemodels:", err)
		os.Exit(1)
	}
	fmt.Println("wrote the example models in", gguftest.ExampleDir)
}
