//go:build e2e

package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"poolc.dev/poolc/internal/testing/testkube"
	"poolc.dev/poolc/plugins/kube"
)

const podPoolHCL = `pool "jobs-lab" {
  pod_pool "harness" {
    image     = "harness:1"
    namespace = "harness"
    members   = "member-a:2,member-b:3"
  }
}
`

// TestE2EPodsRunNeverOverfillsAMember runs three poolc launcher processes,
// each submitting 20 Jobs at once, against a pod pool of two real API
// servers (capacities 2 and 3) whose pods kwok runs for a second each. The
// API server's own view, sampled, never shows a member holding more
// active Jobs than its capacity; every Job runs to completion; a Job goes
// to member-b only when member-a refused it.
func TestE2EPodsRunNeverOverfillsAMember(t *testing.T) {
	env := testkube.Start(t, testkube.Options{Clusters: []string{"member-a", "member-b"}, Kwok: true, RunFor: time.Second})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pool.hcl"), []byte(podPoolHCL), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	k, err := kube.LoadKubeconfig(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	capacity := map[string]int{"member-a": 2, "member-b": 3}
	for name, c := range capacity {
		if _, err := k.Ensure(ctx, kube.Member{Pool: "harness", Context: name, Namespace: "harness", Capacity: c}); err != nil {
			t.Fatal(err)
		}
	}

	// Watch each member's Jobs from its API server: which completed, and
	// sample how many are active.
	var mu sync.Mutex
	completed := map[string]bool{}
	maxActive := map[string]int{}
	samples := 0
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var sampling sync.WaitGroup
	for name := range capacity {
		cs := env.Cluster(name).Client
		sampling.Go(func() {
			// A watch ends with the client's timeout; the next one
			// resumes where it stopped.
			rv := ""
			for sampleCtx.Err() == nil {
				w, err := cs.BatchV1().Jobs("harness").Watch(sampleCtx, metav1.ListOptions{ResourceVersion: rv})
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				for ev := range w.ResultChan() {
					j, ok := ev.Object.(*batchv1.Job)
					if !ok {
						continue
					}
					rv = j.ResourceVersion
					if ev.Type != watch.Deleted && kube.Finished(j) && j.Status.Succeeded == 1 {
						mu.Lock()
						completed[name+"/"+j.Name] = true
						mu.Unlock()
					}
				}
				w.Stop()
			}
		})
		sampling.Go(func() {
			for sampleCtx.Err() == nil {
				jobs, err := cs.BatchV1().Jobs("harness").List(sampleCtx, metav1.ListOptions{})
				if err == nil {
					active := 0
					for i := range jobs.Items {
						if !kube.Finished(&jobs.Items[i]) {
							active++
						}
					}
					mu.Lock()
					maxActive[name] = max(maxActive[name], active)
					samples++
					mu.Unlock()
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}

	poolc, err := exec.LookPath("poolc")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	outs := make([]bytes.Buffer, 3)
	errs := make([]bytes.Buffer, 3)
	var launchers sync.WaitGroup
	for i := range 3 {
		cmd := exec.CommandContext(ctx, poolc, "pods", "run", "--kubeconfig", env.Kubeconfig, "--count", "20", "--timeout", "4m", dir, "--", "run-task")
		cmd.Stdout, cmd.Stderr = &outs[i], &errs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		launchers.Go(func() {
			if err := cmd.Wait(); err != nil {
				t.Errorf("launcher %d: %v\n%s", i, err, errs[i].String())
			}
		})
	}
	launchers.Wait()
	launched := time.Since(start)

	placed := map[string]int{}
	var names []string
	for i := range outs {
		for _, line := range strings.Split(strings.TrimSpace(outs[i].String()), "\n") {
			f := fields(line)
			if _, ok := f["placed"]; !ok || len(f) != 6 {
				t.Fatalf("launcher %d printed %q", i, line)
			}
			placed[f["context"]]++
			names = append(names, f["context"]+"/"+f["job"])
			if f["context"] == "member-b" && !strings.Contains(f["refused"], "member-a") {
				t.Errorf("a Job went to member-b without member-a refusing it: %q", line)
			}
		}
	}
	if len(names) != 60 {
		t.Fatalf("%d Jobs placed, want 60", len(names))
	}
	// Every Job runs to completion (and the TTL controller deletes it).
	for {
		mu.Lock()
		done := 0
		for _, n := range names {
			if completed[n] {
				done++
			}
		}
		mu.Unlock()
		if done == len(names) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d Jobs completed", done, len(names))
		}
		time.Sleep(200 * time.Millisecond)
	}
	stopSampling()
	sampling.Wait()
	t.Logf("60 Jobs placed in %s (%v), all completed after %s; %d samples, most active at once: %v",
		launched.Round(time.Millisecond), placed, time.Since(start).Round(time.Millisecond), samples, maxActive)
	for name, c := range capacity {
		if maxActive[name] > c {
			t.Errorf("%s held %d active Jobs at once, capacity %d", name, maxActive[name], c)
		}
		if maxActive[name] == 0 || placed[name] == 0 {
			t.Errorf("%s never ran a Job", name)
		}
	}

	var status bytes.Buffer
	code := Main([]string{"pods", "status", "--kubeconfig", env.Kubeconfig, dir}, Stdio{Out: &status, Err: &status})
	if code != ExitOK || !strings.Contains(status.String(), "harness  member-b  harness    0     3") {
		t.Errorf("pods status (exit %d):\n%s", code, status.String())
	}
}

// fields reads a "placed k=v k=v" line into its keys; the first word maps
// to "".
func fields(line string) map[string]string {
	out := map[string]string{}
	for _, w := range strings.Fields(line) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			out[k] = ""
			continue
		}
		out[k] = v
	}
	return out
}
