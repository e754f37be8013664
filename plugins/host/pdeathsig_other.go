//go:build !linux

package host

import "os/exec"

// setPdeathsig does nothing where the kernel cannot kill a child when its
// parent dies; the plugin's own watch of its parent (sdk.Serve) does it.
func setPdeathsig(*exec.Cmd) {}
