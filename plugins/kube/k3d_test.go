package kube

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"poolc.dev/poolc/plugins/sdk"
)

// emptyKubeconfig writes a kubeconfig without contexts and loads it.
func emptyKubeconfig(t *testing.T) (*Kubeconfig, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := LoadKubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	return k, path
}

func k3dMember() Member {
	return Member{Pool: "harness", Context: "k3d-lab", Namespace: "jobs", Capacity: 2, Registry: "k3d-reg:5051"}
}

// TestK3dAbsentSaysSo: without k3d on PATH, ensuring a member whose k3d
// context is missing fails with a message that names the context, says
// k3d is not installed and what to do; the step is not retried. A
// missing context that is not k3d's gets the plain missing-context error.
func TestK3dAbsentSaysSo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	k, path := emptyKubeconfig(t)
	_, err := k.Ensure(context.Background(), k3dMember())
	if err == nil {
		t.Fatal("ensure without k3d succeeded")
	}
	for _, want := range []string{`kube context "k3d-lab" is not in the kubeconfig (` + path + `)`, "k3d is not installed here (no k3d on PATH)", "cannot create k3d cluster lab", "install k3d (it needs Docker) or create the cluster yourself"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	a := NewActuator("test")
	a.k = k
	m := sdk.Member{PodPool: "harness", Context: "k3d-lab", Namespace: "jobs", Capacity: 2}
	resp := a.Apply(context.Background(), sdk.ApplyRequest{Step: sdk.Step{ID: "e", Kind: sdk.KindMemberEnsure, Member: &m}}, func(sdk.Progress) {})
	if !resp.Diagnostics.HasErrors() || resp.Retryable || !strings.Contains(resp.Diagnostics[0].Summary, "k3d is not installed here") {
		t.Errorf("apply without k3d: %+v (retryable %v)", resp.Diagnostics, resp.Retryable)
	}

	other := k3dMember()
	other.Context = "lab"
	_, err = k.Ensure(context.Background(), other)
	if ce, ok := err.(*ContextError); !ok || !ce.Missing || strings.Contains(err.Error(), "k3d") {
		t.Errorf("a missing non-k3d context: %v, want the missing-context error", err)
	}
}

// standInK3d puts a k3d on PATH that appends its argv to a log, one call
// a line, fails `registry get` unless registryExists, and on `kubeconfig
// merge NAME --output FILE` writes FILE with a context k3d-NAME.
func standInK3d(t *testing.T, registryExists bool) (log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "argv.log")
	get := "exit 1"
	if registryExists {
		get = "exit 0"
	}
	script := `#!/bin/sh
echo "$*" >> ` + log + `
case "$1 $2" in
"registry get") ` + get + ` ;;
"kubeconfig merge")
	cat > "$5" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: k3d-$3
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: k3d-$3
  context:
    cluster: k3d-$3
    user: admin@k3d-$3
users:
- name: admin@k3d-$3
  user: {}
KUBECONFIG
	;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "k3d"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

func argv(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestK3dPresentCreatesClusterAndRegistry runs the k3d path against a
// stand-in k3d (real k3d needs Docker): the registry is created when k3d
// has none, the cluster with --registry-use and without touching the
// default kubeconfig, its context merged into the file poolc reads; then
// the context exists, so a second call runs k3d no more.
func TestK3dPresentCreatesClusterAndRegistry(t *testing.T) {
	log := standInK3d(t, false)
	k, path := emptyKubeconfig(t)
	var r Result
	if err := k.ensureK3dCluster(context.Background(), k3dMember(), &r); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"registry get k3d-reg",
		"registry create reg --port 5051",
		"cluster create lab --wait --kubeconfig-update-default=false --kubeconfig-switch-context=false --registry-use k3d-reg:5051",
		"kubeconfig merge lab --output " + path + " --kubeconfig-switch-context=false",
	}
	if got := argv(t, log); !slices.Equal(got, want) {
		t.Errorf("k3d ran\n%q\nwant\n%q", got, want)
	}
	if !k.HasContext("k3d-lab") {
		t.Errorf("context k3d-lab is not in the kubeconfig after the merge; it has %v", k.Contexts())
	}
	if want := []string{"k3d registry k3d-reg:5051 created", "k3d cluster lab created"}; !slices.Equal(r.Changed, want) {
		t.Errorf("changed %q, want %q", r.Changed, want)
	}
	if err := k.ensureK3dCluster(context.Background(), k3dMember(), &r); err != nil {
		t.Fatal(err)
	}
	if got := argv(t, log); len(got) != len(want) {
		t.Errorf("a second call ran k3d again: %q", got[len(want):])
	}
}

// TestK3dPresentUsesAnExistingRegistry: a registry k3d already has is
// used, not created; a member without a registry gets no --registry-use.
func TestK3dPresentUsesAnExistingRegistry(t *testing.T) {
	log := standInK3d(t, true)
	k, _ := emptyKubeconfig(t)
	var r Result
	if err := k.ensureK3dCluster(context.Background(), k3dMember(), &r); err != nil {
		t.Fatal(err)
	}
	got := argv(t, log)
	if len(got) != 3 || got[0] != "registry get k3d-reg" || !strings.HasPrefix(got[1], "cluster create lab ") {
		t.Errorf("k3d ran %q, want registry get, cluster create, kubeconfig merge", got)
	}

	log = standInK3d(t, true)
	k, _ = emptyKubeconfig(t)
	m := k3dMember()
	m.Registry = ""
	if err := k.ensureK3dCluster(context.Background(), m, &r); err != nil {
		t.Fatal(err)
	}
	if got := argv(t, log); len(got) != 2 || strings.Contains(got[0], "--registry-use") || !strings.HasPrefix(got[0], "cluster create lab ") {
		t.Errorf("k3d ran %q for a member without a registry", got)
	}
}

// TestK3dFailureSaysWhatK3dSaid: a k3d call that fails reports the
// command and k3d's output.
func TestK3dFailureSaysWhatK3dSaid(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "k3d"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	k, _ := emptyKubeconfig(t)
	m := k3dMember()
	m.Registry = ""
	err := k.ensureK3dCluster(context.Background(), m, &Result{})
	if err == nil || !strings.Contains(err.Error(), "member k3d-lab: k3d cluster create lab") || !strings.Contains(err.Error(), "Cannot connect to the Docker daemon") {
		t.Errorf("error %v, want the k3d command and its output", err)
	}
}
