package main

import (
	"os/exec"
	"strings"
	"testing"
)

// poolc does not link the etcd server: Go initialises every linked
// package whatever the command, and the server's packages were a third of
// poolc version's start-up. poolc etcd serve runs cmd/poolc-etcd instead.
func TestPoolcLinksNoEtcdServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "go.etcd.io/etcd/server/") || pkg == "poolc.dev/poolc/internal/etcdlocal" {
			t.Errorf("poolc links %s", pkg)
		}
	}
}
