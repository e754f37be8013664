package compiler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"poolc.dev/poolc/compiler/memest"
	"poolc.dev/poolc/pools"
)

// MemoryTolerance is how far a declared memory_gb may fall below the
// estimate before validate reports it: 10%. The estimate is
// gguf-parser-go's arithmetic over llama.cpp's buffers; what a process
// really holds differs by allocator rounding and backend buffers the
// arithmetic does not see, and a declared value within a tenth of the
// estimate is within that noise.
const MemoryTolerance = 0.10

// Options choose how Load and CompileWith decide a model's memory.
type Options struct {
	// Estimator reads GGUF headers. Without one no estimate is made, and a
	// model that does not declare memory_gb is an error.
	Estimator *memest.Estimator
	// CheckDeclared estimates the models that declare memory_gb as well,
	// and reports a declared value more than MemoryTolerance below its
	// estimate. A model whose header cannot be read keeps its declared
	// value without a finding: the estimate is a cross-check there.
	CheckDeclared bool
	// StrictMemory makes a declared value below the estimate an error
	// rather than a warning.
	StrictMemory bool
}

// estimator is the process's one estimator, so that loading a base and a
// head configuration reads each header once; remote headers of models
// with a sha256 are kept in the user's cache directory
// ($XDG_CACHE_HOME/poolc/gguf, ~/Library/Caches/poolc/gguf on a Mac).
var estimator = memest.Estimator{CacheDir: cacheDir()}

func cacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "" // no cache: headers are read each run
	}
	return filepath.Join(dir, "poolc", "gguf")
}

// DefaultOptions are Load's: estimates where memory_gb is absent, read
// with the process's shared estimator.
func DefaultOptions() Options { return Options{Estimator: &estimator} }

// estimateWorkers bounds how many headers are read at once: remote reads
// mostly wait on the network, and a pool of unreachable sources should
// cost about one timeout, not one per model.
const estimateWorkers = 4

// resolveMemory estimates the models' memory where opt asks for it,
// before validation: a model without memory_gb takes its estimate, one
// with it is compared.
func resolveMemory(p *pools.Pool, opt Options) pools.Diagnostics {
	var diags pools.Diagnostics
	var todo []int
	for i, m := range p.Models {
		switch {
		case m.Declared && !opt.CheckDeclared:
		case opt.Estimator == nil && !m.Declared:
			diags.Errorf("memory-unknown", pools.Path{"model", m.Name}, "model %q: memory_gb is not declared, and this load makes no estimates: declare memory_gb", m.Name)
		case opt.Estimator != nil:
			todo = append(todo, i)
		}
	}
	ests, errs := make([]memest.Estimate, len(p.Models)), make([]error, len(p.Models))
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(estimateWorkers, len(todo)) {
		wg.Go(func() {
			for i := range work {
				m := p.Models[i]
				ests[i], errs[i] = opt.Estimator.Estimate(context.Background(), memest.Model{Source: m.Source, SHA256: m.SHA256, Args: m.Args, OnNode: onNode(p, m)})
			}
		})
	}
	for _, i := range todo {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, i := range todo {
		if d := decide(&p.Models[i], ests[i], errs[i], opt.StrictMemory); d != nil {
			diags = append(diags, *d)
		}
	}
	return diags
}

// decide sets a model's memory from its estimate, or compares the two,
// and returns the finding, if any.
func decide(m *pools.Model, est memest.Estimate, err error, strict bool) *pools.Diagnostic {
	if err != nil {
		if m.Declared {
			return nil // a cross-check that cannot be made
		}
		return &pools.Diagnostic{Severity: pools.Error, Code: "memory-unknown", Path: pools.Path{"model", m.Name},
			Message: fmt.Sprintf("model %q: memory_gb is not declared and cannot be estimated: %s; declare memory_gb", m.Name, estimateErr(m.Source, err))}
	}
	m.Estimate = &pools.MemoryEstimate{GB: est.GB, Args: est.Args.String(), Parts: parts(est)}
	if !m.Declared {
		m.MemoryGB = est.GB
		return nil
	}
	if m.MemoryGB >= est.GB*(1-MemoryTolerance) {
		return nil
	}
	sev := pools.Warning
	if strict {
		sev = pools.Error
	}
	return &pools.Diagnostic{Severity: sev, Code: "memory-below-estimate", Path: pools.Path{"model", m.Name, "memory_gb"},
		Message: fmt.Sprintf("model %q: memory_gb %s is more than %d%% below the %s its GGUF header gives for %s (%s): the guard and the budgets count %s for each lane of it; raise memory_gb or lower the context",
			m.Name, pools.GB(m.MemoryGB), int(MemoryTolerance*100), pools.GB(est.GB), est.Args, m.Estimate.Parts, pools.GB(m.MemoryGB))}
}

// parts splits an estimate for a message.
func parts(e memest.Estimate) string {
	gb := func(b uint64) string { return pools.GB(float64(b) / 1e9) }
	return fmt.Sprintf("weights %s + KV %s + compute %s", gb(e.Weights), gb(e.KV), gb(e.Compute))
}

// estimateErr says why a model's header could not be read.
func estimateErr(source string, err error) string {
	if errors.Is(err, memest.ErrNoReadableSource) {
		if source == "" {
			return "it has no source to read its GGUF header from (poolc reads file:// and http(s) sources)"
		}
		return fmt.Sprintf("its source %q is read by the node, not by poolc (poolc reads file:// and http(s) sources, and the prefetched copy on a node of its lanes that the built-in llama actuator runs)", source)
	}
	return err.Error()
}
