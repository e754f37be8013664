package host

import (
	"os/exec"
	"syscall"
)

// setPdeathsig has the kernel kill the plugin when poolc dies, however it
// dies; the plugin's own watch of its parent (sdk.Serve) is the fallback.
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
