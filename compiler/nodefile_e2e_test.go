//go:build e2e

package compiler

import (
	"fmt"
	"testing"

	"poolc.dev/poolc/compiler/memest"
	"poolc.dev/poolc/internal/testing/testsshd"
)

// TestE2EMemoryOfAModelOnlyItsNodeHoldsIsReadOverSSH: the node is a real
// sshd; validate's estimate of a host:/path model reads the first
// memest.MaxNodeHeader bytes of the node's copy over SSH (host key
// verified against the llama block's known_hosts) and gives the number
// the file gives when read directly. A node whose host key is not the
// known one is refused, naming its fingerprint.
func TestE2EMemoryOfAModelOnlyItsNodeHoldsIsReadOverSSH(t *testing.T) {
	srv := testsshd.Start(t)
	path := writeModel(t)
	node := fmt.Sprintf("address = %q\n    ssh_port = %d\n    ssh_user = %q", srv.Host, srv.Port, srv.User)
	access := fmt.Sprintf("known_hosts = %q\n      key_file = %q\n      no_agent = true", srv.KnownHosts, srv.ClientKey)
	cfg, diags := CompileWith([]File{nodePool(path, node, access)}, Options{Estimator: &memest.Estimator{}})
	if len(diags) > 0 {
		t.Fatal(diags.Err())
	}
	direct, diags := CompileWith([]File{memPool(HCL, "file://"+path, "", `"-c", "8192"`)}, Options{Estimator: &memest.Estimator{}})
	if len(diags) > 0 {
		t.Fatal(diags.Err())
	}
	if got, want := cfg.Pool.Models[0].MemoryGB, direct.Pool.Models[0].MemoryGB; got != want {
		t.Fatalf("estimated over SSH: %v GB; want %v GB as read directly", got, want)
	}
	t.Logf("estimated over SSH: %v GB, reading at most %d MiB of the node's %.1f GB file", cfg.Pool.Models[0].MemoryGB, memest.MaxNodeHeader>>20, 17.6)

	other := testsshd.Start(t) // another host key at the first one's known_hosts
	node = fmt.Sprintf("address = %q\n    ssh_port = %d\n    ssh_user = %q", other.Host, other.Port, other.User)
	_, diags = CompileWith([]File{nodePool(path, node, access)}, Options{Estimator: &memest.Estimator{}})
	if !diags.HasErrors() {
		t.Fatal("a node whose host key is not in known_hosts was read")
	}
	t.Logf("unknown host key: %v", diags.Err())
}
