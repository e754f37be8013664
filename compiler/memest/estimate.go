// Package memest estimates the resident memory of a llama-server lane from
// its model's GGUF header and the arguments it runs with (context size,
// slots, KV cache types, flash attention, batch sizes; llama-server's
// defaults where an argument is absent), with github.com/gpustack/gguf-parser-go,
// the parser GPUStack uses for the same purpose.
//
// The header is read from a file:// source on the machine running poolc or
// from an http(s) source with range requests, so no weights are
// downloaded; parsed headers are cached by the model's sha256 (by its
// source when it has none). The compiler calls an Estimator while loading
// a pool, before validation; the planner and the simulator only ever see
// the resulting numbers.
//
// The number is everything the loaded model holds on a unified-memory
// machine (a DGX Spark, a Mac), where host and GPU share one memory: every
// layer offloaded, all weights resident (as with --no-mmap, or mapped
// pages once touched), the KV cache for the whole context, and the compute
// buffers on host and GPU. It errs high: gguf-parser-go's own UMA summary
// leaves out buffers it expects to share with mapped pages.
package memest

import (
	"math"

	gguf "github.com/gpustack/gguf-parser-go"
)

// Estimate is a model's resident memory for one set of arguments, with
// the parts it is made of.
type Estimate struct {
	// Bytes is the resident memory; GB is the same in decimal gigabytes,
	// rounded up to 0.01.
	Bytes uint64
	GB    float64
	// Weights, KV and Compute split Bytes: the tensors, the KV cache, and
	// the rest (compute buffers, load footprint).
	Weights, KV, Compute uint64
	// Arch is the model's architecture; Context the context the estimate
	// holds (the argument, or the model's training context, padded as
	// llama.cpp pads it).
	Arch    string
	Context uint64
	// Args are the arguments the estimate is for.
	Args Args
}

// FromFile estimates the resident memory of a parsed GGUF file run with a:
// the sum over gguf-parser-go's devices (the host and the GPU) of the
// load footprint, the weights, the KV cache and the compute buffers.
func FromFile(f *gguf.GGUFFile, a Args) Estimate {
	run := f.EstimateLLaMACppRun(a.options()...)
	var w, kv, rest uint64
	for _, d := range run.Devices {
		w += uint64(d.Weight.Sum())
		kv += uint64(d.KVCache.Sum())
		rest += uint64(d.Footprint) + uint64(d.Computation.Sum())
	}
	total := w + kv + rest
	return Estimate{Bytes: total, GB: math.Ceil(float64(total)/1e7) / 100, Weights: w, KV: kv, Compute: rest,
		Arch: run.Architecture, Context: run.ContextSize, Args: a}
}
