//go:build unix

package cuefront

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"syscall"

	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/parser"

	"poolc.dev/poolc/compiler/tree"
	"poolc.dev/poolc/pools"
)

// MaxEvalMemory is the address space, in bytes, a CUE evaluation may use.
// A few lines of CUE can ask for any amount (a1: a0+a0, a2: a1+a1, ...,
// strings.Repeat, comprehensions over comprehensions); a Go program that
// cannot allocate dies with "fatal error: out of memory", so the
// evaluation runs in a child process under this limit and its death is
// reported as an error of the pool.
const MaxEvalMemory = 3 << 30

// apartEnv, set in a process's environment, makes it a CUE evaluator: it
// reads the sources from stdin, evaluates them under MaxEvalMemory and
// writes the tree to stdout, then exits. poolc's executable (or a test
// binary) is started again in that role by evaluateApart.
const apartEnv = "POOLC_CUE_EVALUATOR"

// InProcessEnv, set to 1 in the environment, makes Parse evaluate CUE in
// its own process, without the memory limit of a child.
const InProcessEnv = "POOLC_CUE_IN_PROCESS"

func init() {
	if os.Getenv(apartEnv) == "1" {
		os.Exit(serveEvaluation(os.Stdin, os.Stdout))
	}
}

// apartResult is what the evaluator sends back.
type apartResult struct {
	Doc   *tree.Value
	Diags pools.Diagnostics
}

// serveEvaluation is the evaluator's whole life.
func serveEvaluation(in io.Reader, out io.Writer) int {
	lim := &syscall.Rlimit{Cur: MaxEvalMemory, Max: MaxEvalMemory}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, lim); err != nil {
		fmt.Fprintln(os.Stderr, "poolc: cannot limit the CUE evaluator's memory:", err)
		return 3
	}
	// Collect garbage hard well before the limit, so only what is live counts.
	debug.SetMemoryLimit(MaxEvalMemory / 2)
	var files []Source
	if err := gob.NewDecoder(in).Decode(&files); err != nil {
		fmt.Fprintln(os.Stderr, "poolc: CUE evaluator:", err)
		return 3
	}
	inst := build.NewContext().NewInstance("", nil)
	for _, f := range files {
		syn, err := parser.ParseFile(f.Name, f.Src, parser.ParseComments)
		if err != nil {
			fmt.Fprintln(os.Stderr, "poolc: CUE evaluator:", err)
			return 3
		}
		if err := inst.AddSyntax(syn); err != nil {
			fmt.Fprintln(os.Stderr, "poolc: CUE evaluator:", err)
			return 3
		}
	}
	doc, diags := evaluate(inst)
	if err := gob.NewEncoder(out).Encode(apartResult{doc, diags}); err != nil {
		fmt.Fprintln(os.Stderr, "poolc: CUE evaluator:", err)
		return 3
	}
	return 0
}

// evaluateApart evaluates files, which Parse has checked, in a child
// process limited to MaxEvalMemory and killed after MaxEvalTime. ok is
// false when no child can be started; the caller evaluates in process.
//
// InProcessEnv=1 in the environment asks for evaluation in process, for
// fuzzing, where a process per input would run a few inputs a second.
func evaluateApart(files []Source) (doc *tree.Value, diags pools.Diagnostics, ok bool) {
	if os.Getenv(InProcessEnv) == "1" {
		return nil, nil, false
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, false
	}
	var in bytes.Buffer
	if err := gob.NewEncoder(&in).Encode(files); err != nil {
		return nil, nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), MaxEvalTime)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), apartEnv+"=1")
	cmd.Stdin = &in
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, false
	}
	err = cmd.Wait()
	first := pools.Pos{File: files[0].Name, Line: 1, Col: 1}
	switch {
	case ctx.Err() != nil:
		return nil, pools.Diagnostics{tooSlow(files[0].Name)}, true
	case err != nil && outOfMemory(stderr.String()):
		diags.ErrorAt("too-large", first, "CUE needed more than %d GiB of memory to evaluate the pool: look for strings or lists built by repetition (strings.Repeat, a2: a1+a1) or comprehensions over large lists", MaxEvalMemory>>30)
		return nil, diags, true
	case err != nil:
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			return nil, nil, false // the evaluator could not work here; evaluate in process
		}
		diags.ErrorAt("cue", first, "the CUE evaluator failed (%v): %s", err, firstLine(stderr.String()))
		return nil, diags, true
	}
	var res apartResult
	if err := gob.NewDecoder(&out).Decode(&res); err != nil {
		diags.ErrorAt("cue", first, "the CUE evaluator's answer is unreadable: %v", err)
		return nil, diags, true
	}
	return res.Doc, res.Diags, true
}

// outOfMemory reports whether a Go program's last words say it ran out of
// memory.
func outOfMemory(stderr string) bool {
	return strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
