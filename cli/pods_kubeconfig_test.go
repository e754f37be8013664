package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `poolc pods status` reads the kubeconfig the pod pool's kube plugin
// reads (its config block's kubeconfig, relative to the pool), not only
// $KUBECONFIG or ~/.kube/config: with neither set, the member's context
// is found there (and its API server, on a closed port, is unreachable),
// where it used to be "not in the kubeconfig".
func TestPodsStatusReadsTheKubePluginsKubeconfig(t *testing.T) {
	dir := t.TempDir()
	pool := `pool "lab" {
  pod_pool "harness" {
    image   = "harness:1"
    members = "ctx-a:2"
    cluster = "kube"
  }
  plugin "kube" {
    builtin = true
    config  = { kubeconfig = "kube/config" }
  }
}
`
	kubeconfig := `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://127.0.0.1:1"}
contexts:
- name: ctx-a
  context: {cluster: a, user: a}
users:
- name: a
  user: {token: x}
`
	os.MkdirAll(filepath.Join(dir, "kube"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "pool.hcl"), []byte(pool), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kube", "config"), []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	var out bytes.Buffer
	code := Main([]string{"pods", "status", dir}, Stdio{Out: &out, Err: &out})
	if code != ExitError || !strings.Contains(out.String(), `kube context "ctx-a" is unreachable`) {
		t.Fatalf("pods status (exit %d):\n%s\nwant member ctx-a read from kube/config (and its server unreachable)", code, out.String())
	}
}
