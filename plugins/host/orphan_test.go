package host_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/proctree"
	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// The test binary doubles as a stand-in for poolc that starts the test
// plugin, prints its pid and waits to be killed: parentEnv names the
// directory of the plugin, and parentMode how to start it.
const (
	parentEnv  = "HOST_TEST_PARENT_PLUGIN_DIR"
	parentMode = "HOST_TEST_PARENT_MODE"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(parentEnv); dir != "" {
		pid, err := startAsParent(dir, os.Getenv(parentMode))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(pid)
		select {}
	}
	os.Exit(m.Run())
}

// startAsParent starts the plugin in dir: through host.Start ("host"), or
// bare, with only the handshake's environment ("bare"), so that only the
// plugin's own watch of its parent can end it. It returns the plugin's pid.
func startAsParent(dir, mode string) (int, error) {
	if mode == "bare" {
		cmd := exec.Command(dir + "/" + host.BinaryName("test"))
		cmd.Env = append(os.Environ(), sdk.MagicCookieKey+"="+sdk.MagicCookieValue, "PLUGIN_PROTOCOL_VERSIONS="+strconv.Itoa(sdk.ProtocolVersion))
		out, err := cmd.StdoutPipe()
		if err != nil {
			return 0, err
		}
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			return 0, fmt.Errorf("no handshake: %v", err)
		}
		return cmd.Process.Pid, nil
	}
	set, ds := host.Start(context.Background(), poolFor(pools.Plugin{Name: "test"}), host.Options{PluginPath: []string{dir}})
	if ds.HasErrors() {
		return 0, ds.Err()
	}
	act, _ := set.Plugin("test")
	pids := make(chan int, 1)
	go act.Apply(context.Background(), sdk.ApplyRequest{Step: sdk.Step{ID: "stop", Kind: sdk.KindStop}}, func(p sdk.Progress) {
		pid, _ := strconv.Atoi(strings.TrimPrefix(p.Message, "waiting pid "))
		pids <- pid
	})
	return <-pids, nil
}

// gone reports whether the process has ended (a zombie counts: nobody may
// be left to reap it).
func gone(pid int) bool {
	p, err := proctree.Read(pid)
	if err != nil {
		return syscall.Kill(pid, 0) != nil
	}
	return p.Ended()
}

// TestPluginDiesWithPoolc kills a poolc stand-in with SIGKILL, so it cleans
// up nothing, and checks its plugin does not outlive it: through
// Pdeathsig when host started it, through its own watch otherwise.
func TestPluginDiesWithPoolc(t *testing.T) {
	dir, _, _ := testPlugin(t)
	for _, mode := range []string{"host", "bare"} {
		t.Run(mode, func(t *testing.T) {
			parent := exec.Command(os.Args[0])
			parent.Env = append(os.Environ(), parentEnv+"="+dir, parentMode+"="+mode)
			parent.Stderr = os.Stderr
			out, err := parent.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := parent.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				_ = parent.Process.Kill()
				t.Fatalf("the parent printed no pid: %v", err)
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(line))
			if pid <= 0 || gone(pid) {
				t.Fatalf("plugin pid %q is not running", line)
			}
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			if err := parent.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = parent.Wait()
			for deadline := time.Now().Add(30 * time.Second); !gone(pid); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("plugin %d outlived its parent by 30s", pid)
				}
			}
		})
	}
}
