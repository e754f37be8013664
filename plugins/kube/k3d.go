package kube

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// K3dPrefix starts the names k3d gives its kubeconfig contexts and its
// registries' containers.
const K3dPrefix = "k3d-"

// ensureK3dCluster creates the k3d cluster (and its registry) behind a
// k3d-NAME context the kubeconfig does not have yet, when the k3d binary
// is on PATH; without k3d it says so plainly. Other contexts, and k3d
// contexts that exist, are left to Client.
//
// k3d is told not to touch the default kubeconfig (which may not be the
// file poolc reads, and whose current context is the user's): the new
// context is merged into the file poolc reads, without switching to it:
//
//	k3d registry get k3d-REG || k3d registry create REG --port PORT
//	k3d cluster create NAME --wait --kubeconfig-update-default=false --kubeconfig-switch-context=false [--registry-use k3d-REG:PORT]
//	k3d kubeconfig merge NAME --output FILE --kubeconfig-switch-context=false
func (k *Kubeconfig) ensureK3dCluster(ctx context.Context, m Member, r *Result) error {
	name, isK3d := strings.CutPrefix(m.Context, K3dPrefix)
	if !isK3d || k.HasContext(m.Context) {
		return nil
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("kube context %q: k3d cluster name %q: %s", m.Context, name, errs[0])
	}
	bin, err := exec.LookPath("k3d")
	if err != nil {
		return fmt.Errorf("kube context %q is not in the kubeconfig (%s), and k3d is not installed here (no k3d on PATH), so poolc cannot create k3d cluster %s: install k3d (it needs Docker) or create the cluster yourself",
			m.Context, k.Sources(), name)
	}
	args := []string{"cluster", "create", name, "--wait", "--kubeconfig-update-default=false", "--kubeconfig-switch-context=false"}
	if m.Registry != "" {
		reg, port, _ := net.SplitHostPort(m.Registry)
		regName, ok := strings.CutPrefix(reg, K3dPrefix)
		if !ok {
			return fmt.Errorf("member %s: registry %s: a k3d registry's name starts with %s", m.Context, m.Registry, K3dPrefix)
		}
		// k3d names the registry's container k3d-NAME; `registry get`
		// fails when there is none.
		if _, err := k3d(ctx, bin, "registry", "get", reg); err != nil {
			if _, err := k3d(ctx, bin, "registry", "create", regName, "--port", port); err != nil {
				return fmt.Errorf("member %s: %w", m.Context, err)
			}
			r.changed("k3d registry %s created", m.Registry)
		}
		args = append(args, "--registry-use", m.Registry)
	}
	if _, err := k3d(ctx, bin, args...); err != nil {
		return fmt.Errorf("member %s: %w", m.Context, err)
	}
	r.changed("k3d cluster %s created", name)
	file := k.writeFile()
	if _, err := k3d(ctx, bin, "kubeconfig", "merge", name, "--output", file, "--kubeconfig-switch-context=false"); err != nil {
		return fmt.Errorf("member %s: %w", m.Context, err)
	}
	if err := k.reload(); err != nil {
		return err
	}
	if !k.HasContext(m.Context) {
		return fmt.Errorf("member %s: k3d created cluster %s and merged its kubeconfig into %s, but poolc reads %s and finds no context %s there", m.Context, name, file, k.Sources(), m.Context)
	}
	return nil
}

func k3d(ctx context.Context, bin string, args ...string) ([]byte, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("k3d %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.Bytes(), nil
}
