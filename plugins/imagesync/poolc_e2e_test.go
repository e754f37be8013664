//go:build e2e

package imagesync

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"poolc.dev/poolc/internal/testing/testkube"
	"poolc.dev/poolc/internal/testing/testsshd"
	"poolc.dev/poolc/plugins/kube"
)

// buildPoolc builds the poolc binary for t.
func buildPoolc(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "poolc")
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/poolc")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/poolc: %v\n%s", err, out)
	}
	return bin
}

// poolcRun runs poolc in dir and returns its output and exit code.
func poolcRun(t *testing.T, bin, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("poolc %v: %v", args, err)
	}
	return string(out), code
}

// poolFile is a pool with one node and a pod pool of two members, each
// with its own registry behind one sshd, synced by the built-in
// image-sync plugin from an OCI layout; image is the pod pool's image.
func poolFile(srv *testsshd.Server, image string, ports [2]int) string {
	return fmt.Sprintf(`pool "lab" {
  node "a" {
    address   = "a.lan"
    memory_gb = 64
  }
  pod_pool "harness" {
    image      = "%s"
    image_sync = "image-sync"
    member "pool-node-b" {
      ssh_host = "%s"
      ssh_port = %d
      registry = "k3d-lab-registry-b:%d"
    }
    member "pool-node-c" {
      ssh_host = "%s"
      ssh_port = %d
      registry = "k3d-lab-registry-c:%d"
    }
  }
  plugin "sim" {
    builtin = true
  }
  plugin "image-sync" {
    builtin = true
    config = {
      source      = "oci:layout"
      build       = "ci-1"
      known_hosts = %q
      ssh_key     = %q
      ssh_user    = %q
    }
  }
}
`, image, srv.Host, srv.Port, ports[0], srv.Host, srv.Port, ports[1], srv.KnownHosts, srv.ClientKey, srv.User)
}

func TestE2EPoolcApplySyncsEveryMember(t *testing.T) {
	bin := buildPoolc(t)
	srv := testsshd.Start(t)
	regs := [2]*distribution{startDistribution(t), startDistribution(t)}
	ports := [2]int{regs[0].port, regs[1].port}
	dir := t.TempDir()

	writeImage := func(size int64) string {
		os.RemoveAll(filepath.Join(dir, "layout"))
		p, err := layout.Write(filepath.Join(dir, "layout"), empty.Index)
		if err != nil {
			t.Fatal(err)
		}
		img := imageOf(t, layers(t, 2, size), nil)
		if err := p.AppendImage(img); err != nil {
			t.Fatal(err)
		}
		return mustDigest(t, img).String()
	}
	digest := writeImage(256 << 10)
	os.WriteFile(filepath.Join(dir, "pool.hcl"), []byte(poolFile(srv, "elanous-harness@"+digest, ports)), 0o644)

	out, code := poolcRun(t, bin, dir, "apply", "--auto-approve", ".")
	t.Logf("poolc apply:\n%s", out)
	if code != 0 || !strings.Contains(out, "2 image-sync") {
		t.Fatalf("apply exited %d", code)
	}
	for i, r := range regs {
		if !r.serves(t, "elanous-harness", digest) {
			t.Errorf("registry %d does not serve %s", i, digest)
		}
	}
	out, code = poolcRun(t, bin, dir, "plan", "--detailed-exitcode", ".")
	if code != 0 || !strings.Contains(out, "No changes") {
		t.Fatalf("plan after apply exited %d:\n%s", code, out)
	}

	// A new image digest in the config: one image-sync per member.
	digest2 := writeImage(128 << 10)
	os.WriteFile(filepath.Join(dir, "pool.hcl"), []byte(poolFile(srv, "elanous-harness@"+digest2, ports)), 0o644)
	out, code = poolcRun(t, bin, dir, "plan", ".")
	t.Logf("poolc plan after a new digest:\n%s", out)
	if code != 0 || !strings.Contains(out, "Plan: 2 image-sync ·") {
		t.Fatalf("plan exited %d", code)
	}
	// Each step says what its member's registry lacks: the new layers
	// (the config and one layer of 128 KiB; the other layer, also new,
	// as large) and the manifest.
	for i, member := range []string{"pool-node-b", "pool-node-c"} {
		title := fmt.Sprintf("image-sync elanous-harness@%s to harness/%s (k3d-lab-registry-%c:%d, ", digest2, member, 'b'+i, ports[i])
		if !strings.Contains(out, title) || !strings.Contains(out, " kB to send)") {
			t.Errorf("plan has no step %q…kB to send)", title)
		}
	}
	if strings.Contains(out, "warning") {
		t.Errorf("plan warns: the bytes to move belong in the steps")
	}
	out, _ = poolcRun(t, bin, dir, "plan", "--format", "json", ".")
	var plan struct {
		Steps []struct {
			Kind     string
			Estimate struct {
				TransferBytes int64 `json:"transfer_bytes"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("plan --format json: %v\n%s", err, out)
	}
	for _, s := range plan.Steps {
		if s.Kind == "image-sync" && s.Estimate.TransferBytes < 2*128<<10 {
			t.Errorf("JSON plan: an image-sync step expects %d bytes, want at least the two new layers (%d)", s.Estimate.TransferBytes, 2*128<<10)
		}
	}

	// Applied with JSON events: each member's bytes sent arrive as
	// progress, then the step is done.
	out, code = poolcRun(t, bin, dir, "apply", "--auto-approve", "--json", ".")
	if code != 0 {
		t.Fatalf("apply --json exited %d:\n%s", code, out)
	}
	progress := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		var e struct {
			Event, Step, Message string
			Fraction             float64
			BytesDone            int64 `json:"bytes_done"`
			BytesTotal           int64 `json:"bytes_total"`
		}
		if json.Unmarshal([]byte(line), &e) != nil || e.Event != "progress" || !strings.HasPrefix(e.Step, "image-sync:") {
			continue
		}
		if e.BytesTotal > 0 && e.BytesDone <= e.BytesTotal {
			progress[e.Step]++
		}
	}
	if len(progress) != 2 {
		t.Errorf("byte progress for %v, want both members' image-sync steps\n%s", progress, out)
	}
	for i, r := range regs {
		if !r.serves(t, "elanous-harness", digest2) {
			t.Errorf("registry %d does not serve %s", i, digest2)
		}
	}
	if out, code = poolcRun(t, bin, dir, "plan", "--detailed-exitcode", "."); code != 0 {
		t.Errorf("plan after the second apply exited %d:\n%s", code, out)
	}
}

func TestE2EPoolcUnpinnedImageSettles(t *testing.T) {
	bin := buildPoolc(t)
	srv := testsshd.Start(t)
	regs := [2]*distribution{startDistribution(t), startDistribution(t)}
	ports := [2]int{regs[0].port, regs[1].port}
	dir := t.TempDir()
	p, err := layout.Write(filepath.Join(dir, "layout"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	img := imageOf(t, layers(t, 2, 64<<10), nil)
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	digest := mustDigest(t, img).String()
	os.WriteFile(filepath.Join(dir, "pool.hcl"), []byte(poolFile(srv, "elanous-harness:v1", ports)), 0o644)

	out, code := poolcRun(t, bin, dir, "apply", "--auto-approve", ".")
	t.Logf("poolc apply:\n%s", out)
	if code != 0 {
		t.Fatalf("apply exited %d", code)
	}
	for i, r := range regs {
		if !r.serves(t, "elanous-harness", digest) {
			t.Errorf("registry %d does not serve %s", i, digest)
		}
	}
	out, code = poolcRun(t, bin, dir, "plan", "--detailed-exitcode", ".")
	t.Logf("poolc plan after apply:\n%s", out)
	if code != 0 || !strings.Contains(out, "No changes") || strings.Contains(out, "Drift") {
		t.Fatalf("plan after apply exited %d", code)
	}

	// A Job launched by poolc pods run, on a real API server per member,
	// runs the member registry's copy of the digest synced, not the tag.
	env := testkube.Start(t, testkube.Options{Clusters: []string{"pool-node-b", "pool-node-c"}})
	k, err := kube.LoadKubeconfig(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"pool-node-b", "pool-node-c"} {
		if _, err := k.Ensure(ctx, kube.Member{Pool: "harness", Context: name, Namespace: "harness", Capacity: 2}); err != nil {
			t.Fatal(err)
		}
	}
	out, code = poolcRun(t, bin, dir, "pods", "run", "--kubeconfig", env.Kubeconfig, ".", "--", "run-task")
	t.Logf("poolc pods run:\n%s", out)
	if code != 0 {
		t.Fatalf("pods run exited %d", code)
	}
	jobs, err := env.Cluster("pool-node-b").Client.BatchV1().Jobs("harness").List(ctx, metav1.ListOptions{})
	if err != nil || len(jobs.Items) != 1 {
		t.Fatalf("jobs on pool-node-b: %v, %v; want the one placed (the member first in priority)", jobs, err)
	}
	want := fmt.Sprintf("k3d-lab-registry-b:%d/elanous-harness@%s", ports[0], digest)
	if got := jobs.Items[0].Spec.Template.Spec.Containers[0].Image; got != want {
		t.Errorf("the Job runs %s, want the member registry's copy %s", got, want)
	}
}
