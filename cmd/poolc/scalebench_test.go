package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/internal/poolgen"
	"poolc.dev/poolc/internal/testing/poolctest"
	"poolc.dev/poolc/internal/testing/scalepool"
)

// BenchmarkScaleCLI runs the real poolc binary on the generated pools of
// each size in scalepool.Sizes (with -short, up to
// scalepool.ShortLanes), in one directory per size, in the order a user
// would: validate; plan from an empty state; apply from it through the
// out-of-process sim (its world in its world file); plan after that apply
// with the refresh (every lane observed through the sim) and without it.
// Each command is timed alone; it reports the seconds of each ("s/NAME"),
// its CPU seconds, user and system ("cpu-s/NAME": on a loaded machine the
// steadier figure), and the peak resident memory per lane ("B/lane", the
// largest of the commands' maxrss). A pool past 16 MiB is
// read with compiler.MaxPoolSizeEnv set. Run with -benchtime=1x: each
// iteration starts from a fresh directory.
func BenchmarkScaleCLI(b *testing.B) {
	bin := poolctest.Binary(b)
	for _, lanes := range scalepool.Sizes() {
		parts, err := scalepool.Files(poolgen.HCL, lanes)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("lanes=%d", lanes), func(b *testing.B) {
			times, cpu := map[string]time.Duration{}, map[string]time.Duration{}
			var peak int64
			for range b.N {
				b.StopTimer()
				dir := b.TempDir()
				for i := range parts {
					if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("gen-%d.hcl", i+1)), parts[i], 0o644); err != nil {
						b.Fatal(err)
					}
				}
				for _, c := range []struct {
					name string
					args []string
				}{
					{"validate", []string{"validate", dir}},
					{"plan-empty", []string{"plan", dir}},
					{"apply", []string{"apply", "--auto-approve", dir}},
					{"plan-nochange-refresh", []string{"plan", "--detailed-exitcode", dir}},
					{"plan-nochange", []string{"plan", "--detailed-exitcode", "--refresh=false", dir}},
				} {
					r := runTimed(b, bin, c.args)
					times[c.name] += r.wall
					cpu[c.name] += r.cpu
					peak = max(peak, r.rss)
				}
			}
			for name, d := range times {
				b.ReportMetric(d.Seconds()/float64(b.N), "s/"+name)
				b.ReportMetric(cpu[name].Seconds()/float64(b.N), "cpu-s/"+name)
			}
			b.ReportMetric(float64(peak)/float64(lanes), "B/lane")
		})
	}
}

// run is what runTimed saw of one poolc command.
type run struct {
	wall, cpu time.Duration // cpu: user and system
	rss       int64         // peak resident bytes
	out       []byte        // standard output
}

// runTimed runs poolc with args, timed alone, and returns what it saw;
// any exit but 0 fails the benchmark.
func runTimed(b *testing.B, bin string, args []string) run {
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), compiler.MaxPoolSizeEnv+"=64")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	b.StartTimer()
	begin := time.Now()
	err := cmd.Run()
	elapsed := time.Since(begin)
	b.StopTimer()
	if err != nil {
		b.Fatalf("poolc %v: %v\n%s", args[0], err, errOut.String())
	}
	r := run{wall: elapsed, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), out: out.Bytes()}
	if u, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rss = u.Maxrss
		if runtime.GOOS != "darwin" {
			r.rss <<= 10 // kilobytes but on macOS
		}
	}
	return r
}
