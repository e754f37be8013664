package llama

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/llamastub"
	"poolc.dev/poolc/internal/systemdstub"
	"poolc.dev/poolc/plugins/sdk"
)

var (
	systemctlOnce sync.Once
	systemctlDir  string
	systemctlErr  error
)

// withSystemctl puts the systemctl stand-in first on PATH (systemd does
// not run on the machines the tests run on) with a user manager of the
// test's own: its unit directory (returned) and runtime directory.
func withSystemctl(t *testing.T) string {
	t.Helper()
	systemctlOnce.Do(func() {
		if systemctlDir, systemctlErr = os.MkdirTemp("", "systemctl-"); systemctlErr == nil {
			_, systemctlErr = systemdstub.Build(systemctlDir)
		}
	})
	if systemctlErr != nil {
		t.Fatal(systemctlErr)
	}
	t.Setenv("PATH", systemctlDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	return filepath.Join(config, "systemd", "user")
}

// systemctl runs `systemctl --user args...` and returns its output.
func systemctl(t *testing.T, args ...string) string {
	t.Helper()
	out, _ := exec.Command("systemctl", append([]string{"--user"}, args...)...).Output()
	return strings.TrimSpace(string(out))
}

// TestActuatorRunsALaneAsASystemdUserUnit drives the actuator as poolc
// does with service_manager = "systemd": the start writes the lane's
// unit and starts it, the pidfile holds the unit's MainPID, observe sees
// the lane (with the config's environment, which reached the process
// through the unit), a stop drains it and stops and removes the unit; a
// lane killed by hand is drift, and its stop succeeds and removes the
// unit, as does a stop of a lane already gone.
func TestActuatorRunsALaneAsASystemdUserUnit(t *testing.T) {
	units := withSystemctl(t)
	ctx := context.Background()
	act, lane, l, set := oneLaneActuator(t, map[string]any{"service_manager": "systemd"})
	node := lane.Node
	apply := func(kind sdk.StepKind) {
		t.Helper()
		if r := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: string(kind), Kind: kind, Lane: lane}}, nil); r.Diagnostics.HasErrors() {
			t.Fatalf("%s: %v", kind, r.Diagnostics)
		}
	}
	unit := systemdUnitName(l.key())
	unitFile := filepath.Join(units, unit)
	pidfile := filepath.Join(set.StateDir, node.Name, l.key()+".pid")
	defer act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "cleanup", Kind: sdk.KindStop, Lane: lane}}, nil)

	// start: the unit runs the lane, its MainPID is the pidfile's.
	mainPID := func() int {
		t.Helper()
		apply(sdk.KindStart)
		b, err := os.ReadFile(pidfile)
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if got := systemctl(t, "show", "-p", "MainPID", "--value", unit); got != strconv.Itoa(pid) || pid == 0 {
			t.Fatalf("pidfile %d, the unit's MainPID %q", pid, got)
		}
		if got := systemctl(t, "is-active", unit); got != "active" {
			t.Fatalf("%s is %q", unit, got)
		}
		return pid
	}
	pid := mainPID()
	text, err := os.ReadFile(unitFile)
	if err != nil || !strings.Contains(string(text), `"--port" "`+strconv.Itoa(l.Port)+`"`) {
		t.Fatalf("unit file %s: %v\n%s", unitFile, err, text)
	}
	environ, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if !strings.Contains(string(environ), llamastub.EnvLoadRate+"=4000000\x00") {
		t.Errorf("the lane's environment %q lacks the config's env", environ)
	}
	obs := act.Observe(ctx, sdk.ObserveRequest{})
	if len(obs.Fleet.Lanes) != 1 || obs.Fleet.Lanes[0].Model.Name != "qwen" || obs.Fleet.Lanes[0].Port != l.Port || len(obs.Diagnostics) != 0 {
		t.Fatalf("observed %+v %v", obs.Fleet.Lanes, obs.Diagnostics)
	}

	// stop of the running lane: drained, the unit stopped and removed.
	apply(sdk.KindStop)
	if processLives(pid) {
		t.Errorf("pid %d still runs after the stop", pid)
	}
	if _, err := os.Stat(unitFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unit file after the stop: %v", err)
	}
	if got := systemctl(t, "is-active", unit); got != "inactive" {
		t.Errorf("%s after the stop is %q", unit, got)
	}

	// Killed by hand: drift, then a stop that succeeds and removes the unit.
	pid = mainPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for processLives(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	obs = act.Observe(ctx, sdk.ObserveRequest{})
	if len(obs.Fleet.Lanes) != 0 || len(obs.Diagnostics) != 1 || !strings.Contains(obs.Diagnostics[0].Summary, "is gone") {
		t.Fatalf("after the kill: lanes %+v, diagnostics %v; want drift", obs.Fleet.Lanes, obs.Diagnostics)
	}
	apply(sdk.KindStop)
	if _, err := os.Stat(unitFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unit file after the stop of a killed lane: %v", err)
	}
	if _, err := os.Stat(pidfile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pidfile after the stop of a killed lane: %v", err)
	}
	// A stop of a lane already gone, unit and all, succeeds.
	apply(sdk.KindStop)
}

// TestASystemdLaneThatExitsWhileLoadingFailsWithItsLog: the unit's
// output goes to the lane's log, whose end the failed start reports.
func TestASystemdLaneThatExitsWhileLoadingFailsWithItsLog(t *testing.T) {
	withSystemctl(t)
	ctx := context.Background()
	set := testSettings(t)
	set.ServiceManager = ServiceSystemd
	n := NewNode(Local{}, set)
	l := testLane(t, "broken", 1000)
	l.Model = filepath.Join(t.TempDir(), "missing.gguf")
	stopAtEnd(t, n, l)
	err := n.Start(ctx, l, nil)
	var se *StartError
	if !errors.As(err, &se) || !strings.Contains(se.Log, "missing.gguf") {
		t.Fatalf("start with a missing model: %v; want a StartError whose log names the file", err)
	}
}

// TestAnUnknownServiceManagerIsRefused: the schema takes only the three.
func TestAnUnknownServiceManagerIsRefused(t *testing.T) {
	r := NewActuator("test").Configure(context.Background(), sdk.ConfigureRequest{ConfigJSON: []byte(`{"local":true,"service_manager":"upstart"}`)})
	if !r.Diagnostics.HasErrors() {
		t.Errorf("service_manager upstart accepted")
	}
	if _, err := (Settings{ServiceManager: "upstart"}).manager(); err == nil {
		t.Errorf("Settings.ServiceManager upstart accepted")
	}
}
