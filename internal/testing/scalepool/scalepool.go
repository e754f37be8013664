// Package scalepool is the generated pools the scale benchmarks measure
// (compiler's BenchmarkScale and BenchmarkScaleCUE, cmd/poolc's
// BenchmarkScaleCLI): their sizes, the largest one run with -short, and
// their files, so that every benchmark measures the same pools.
package scalepool

import (
	"testing"

	"poolc.dev/poolc/internal/poolgen"
)

// lanes are the pool sizes the scale benchmarks measure: their figures
// are how the cost grows with the pool.
var lanes = []int{1000, 10000, 50000, 100000}

// ShortLanes is the largest size the scale benchmarks run with -short
// (CI runs every benchmark once that way, to see it compile and run).
const ShortLanes = 10000

// LanesPerFile is how many lanes a generated file holds at most: a
// generated HCL file of about 80,000 lanes passes the most tokens poolc
// reads from one HCL file (hclfront.MaxTokens).
const LanesPerFile = 40000

// Sizes returns the pool sizes to measure, smallest first: all of them,
// or with -short those up to ShortLanes.
func Sizes() []int {
	var out []int
	for _, n := range lanes {
		if testing.Short() && n > ShortLanes {
			break
		}
		out = append(out, n)
	}
	return out
}

// Options is the pool of n lanes the benchmarks generate: a node per ten
// lanes (two at least), a pod-pool member per hundred, seed 1.
func Options(n int) poolgen.Options {
	return poolgen.Options{Nodes: max(2, n/10), Lanes: n, Members: n / 100, Seed: 1}
}

// Files generates the pool of n lanes in lang as the contents of files of
// LanesPerFile lanes at most (one at least), which poolc loads as one
// pool, as poolgen --files writes them.
func Files(lang poolgen.Language, n int) ([][]byte, error) {
	return poolgen.Parts(lang, Options(n), max(1, (n+LanesPerFile-1)/LanesPerFile))
}
