package host_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// reattachOne sets POOLC_REATTACH_PLUGINS to one entry for plugin name,
// served in this process, after edit changes it.
func reattachOne(t *testing.T, name string, edit func(*sdk.ReattachConfig)) {
	t.Helper()
	var rc sdk.ReattachConfig
	if err := json.Unmarshal(serveDebug(t, name, &observer{kinds: append(append([]sdk.StepKind{}, sdk.RuntimeKinds...), sdk.GatewayKinds...)}), &rc); err != nil {
		t.Fatal(err)
	}
	edit(&rc)
	env, _ := json.Marshal(map[string]sdk.ReattachConfig{name: rc})
	t.Setenv(sdk.ReattachEnv, string(env))
}

// A reattach address over TCP is refused: go-plugin reattaches without
// TLS, and a TCP port is open to anyone who can reach it.
func TestReattachRefusesTCP(t *testing.T) {
	reattachOne(t, "p", func(rc *sdk.ReattachConfig) { rc.Addr = sdk.ReattachAddr{Network: "tcp", String: "127.0.0.1:1"} })
	set, ds := host.Start(context.Background(), poolFor(pools.Plugin{Name: "p"}), host.Options{})
	if set != nil {
		set.Close()
	}
	if !ds.HasErrors() || !strings.Contains(ds.Err().Error(), "only a unix socket is accepted") {
		t.Fatalf("got %v, want the TCP address refused", ds)
	}
}

// A plugin pinned by sha256 is not replaced by a reattached process unless
// the operator says so.
func TestReattachDoesNotReplaceAPinnedPlugin(t *testing.T) {
	reattachOne(t, "p", func(*sdk.ReattachConfig) {})
	pinned := pools.Plugin{Name: "p", SHA256: strings.Repeat("0", 64)}
	set, ds := host.Start(context.Background(), poolFor(pinned), host.Options{})
	if set != nil {
		set.Close()
	}
	if !ds.HasErrors() || !strings.Contains(ds.Err().Error(), host.ReattachPinnedEnv+"=1") {
		t.Fatalf("got %v, want the pinned plugin kept", ds)
	}
	t.Setenv(host.ReattachPinnedEnv, "1")
	set, ds = host.Start(context.Background(), poolFor(pinned), host.Options{})
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	set.Close()
}

// Closing a reattached plugin never signals the process its entry names:
// poolc did not start it, and the pid may be any process at all.
func TestReattachNeverSignalsTheNamedProcess(t *testing.T) {
	bystander := exec.Command("sleep", "60")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- bystander.Wait() }()
	t.Cleanup(func() { _ = bystander.Process.Kill() })
	reattachOne(t, "p", func(rc *sdk.ReattachConfig) { rc.Pid, rc.Test = bystander.Process.Pid, false })
	set, ds := host.Start(context.Background(), poolFor(pools.Plugin{Name: "p"}), host.Options{})
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	set.Close()
	select {
	case err := <-exited:
		t.Fatalf("the process named by the reattach entry ended when poolc closed the plugin: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("bystander: %v", err)
	}
}
