package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A member's ssh_host written as [user@]host[:port] is refused, in HCL
// and CUE alike, by a message naming where the login and the port go:
// the image-sync plugin's ssh_user and the member's ssh_port.
func TestAMemberSSHHostWithUserOrPortNamesWhereTheyGo(t *testing.T) {
	for file, src := range map[string]string{
		"pool.hcl": `pool "lab" {
  pod_pool "harness" {
    image = "harness:1"
    member "pool-node-b" {
      ssh_host = "ops@node-b:2222"
    }
  }
}
`,
		"pool.cue": `pool: lab: pod_pool: harness: {
	image: "harness:1"
	member: "pool-node-b": ssh_host: "ops@node-b:2222"
}
`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, file), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, diags := Load([]string{dir})
		msg := diags.Err()
		if msg == nil || !strings.Contains(msg.Error(), "ssh_user") || !strings.Contains(msg.Error(), "ssh_port") || !strings.Contains(msg.Error(), file+":") {
			t.Errorf("%s: %v, want an error at its place naming ssh_user and ssh_port", file, msg)
		}
	}
}
