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

	"poolc.dev/poolc/internal/testing/llamastub"
	"poolc.dev/poolc/internal/testing/servicestub"
	"poolc.dev/poolc/plugins/sdk"
)

var (
	standInOnce sync.Once
	standInDir  string
	standInErr  error
)

// withServiceManager puts the stand-ins of systemctl and launchctl first
// on PATH (neither manager runs on the machines the tests run on) with a
// user manager of the test's own: its own home, unit directory and
// runtime directory. It returns those variables as NAME=value, for a
// node reached over SSH to have them too.
func withServiceManager(t *testing.T) []string {
	t.Helper()
	standInOnce.Do(func() {
		if standInDir, standInErr = os.MkdirTemp("", "servicestub-"); standInErr != nil {
			return
		}
		for _, name := range []string{servicestub.Systemctl, servicestub.Launchctl} {
			if _, standInErr = servicestub.Build(standInDir, name); standInErr != nil {
				return
			}
		}
	})
	if standInErr != nil {
		t.Fatal(standInErr)
	}
	vars := []string{"PATH=" + standInDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(), "XDG_RUNTIME_DIR=" + t.TempDir()}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return vars
}

// managerCase is how a test asks a service manager about a lane's unit.
type managerCase struct {
	// file is where the unit file of unit is.
	file func(unit string) string
	// mainPID asks the manager for the unit's process ("0": none).
	mainPID func(t *testing.T, unit string) string
}

// managerCases are the service managers, asked as an operator would.
var managerCases = map[string]managerCase{
	ServiceSystemd: {
		file: func(unit string) string { return filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "systemd", "user", unit) },
		mainPID: func(t *testing.T, unit string) string {
			out, _ := exec.Command("systemctl", "--user", "show", "-p", "MainPID", "--value", unit).Output()
			return strings.TrimSpace(string(out))
		},
	},
	ServiceLaunchd: {
		file: func(label string) string {
			return filepath.Join(os.Getenv("HOME"), "Library", "LaunchAgents", label+".plist")
		},
		mainPID: func(t *testing.T, label string) string {
			out, _ := exec.Command("launchctl", "print", "gui/"+strconv.Itoa(os.Getuid())+"/"+label).Output()
			for _, line := range strings.Split(string(out), "\n") {
				if f := strings.Fields(line); len(f) == 3 && f[0] == "pid" && f[1] == "=" {
					return f[2]
				}
			}
			return "0"
		},
	},
}

// TestActuatorRunsALaneAsAUnit drives the actuator as poolc does with
// service_manager = "systemd" and "launchd": the start writes the lane's
// unit and starts it, the pidfile holds the unit's process as the
// manager reports it, observe sees the lane (with the config's
// environment, which reached the process through the unit), a stop
// drains it and stops and removes the unit; a lane killed by hand is
// drift, and its stop succeeds and removes the unit, as does a stop of a
// lane already gone.
func TestActuatorRunsALaneAsAUnit(t *testing.T) {
	for _, manager := range []string{ServiceSystemd, ServiceLaunchd} {
		t.Run(manager, func(t *testing.T) { runsALaneAsAUnit(t, manager) })
	}
}

func runsALaneAsAUnit(t *testing.T, manager string) {
	withServiceManager(t)
	mc := managerCases[manager]
	ctx := context.Background()
	act, lane, l, set := oneLaneActuator(t, map[string]any{"service_manager": manager})
	node := lane.Node
	apply := func(kind sdk.StepKind) {
		t.Helper()
		if r := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: string(kind), Kind: kind, Lane: lane}}, nil); r.Diagnostics.HasErrors() {
			t.Fatalf("%s: %v", kind, r.Diagnostics)
		}
	}
	unit := serviceManagers[manager].unit(l.key())
	unitFile := mc.file(unit)
	pidfile := filepath.Join(set.StateDir, node.Name, l.key()+".pid")
	defer act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "cleanup", Kind: sdk.KindStop, Lane: lane}}, nil)

	// start: the unit runs the lane, its process is the pidfile's.
	start := func() int {
		t.Helper()
		apply(sdk.KindStart)
		b, err := os.ReadFile(pidfile)
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if got := mc.mainPID(t, unit); got != strconv.Itoa(pid) || pid == 0 {
			t.Fatalf("pidfile %d, the unit's process %q", pid, got)
		}
		return pid
	}
	pid := start()
	text, err := os.ReadFile(unitFile)
	if err != nil || !strings.Contains(string(text), strconv.Itoa(l.Port)) {
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
	if got := mc.mainPID(t, unit); got != "0" {
		t.Errorf("%s after the stop has process %q", unit, got)
	}

	// Killed by hand: drift, then a stop that succeeds and removes the unit.
	pid = start()
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
	// And the lane starts again after all that.
	start()
	apply(sdk.KindStop)
}

// TestAUnitThatExitsWhileLoadingFailsWithItsLog: the unit's output goes
// to the lane's log, whose end the failed start reports; the stop after
// removes the unit.
func TestAUnitThatExitsWhileLoadingFailsWithItsLog(t *testing.T) {
	for _, manager := range []string{ServiceSystemd, ServiceLaunchd} {
		t.Run(manager, func(t *testing.T) {
			withServiceManager(t)
			set := testSettings(t)
			set.ServiceManager = manager
			n := NewNode(Local{}, set)
			l := testLane(t, "broken", 1000)
			l.Model = filepath.Join(t.TempDir(), "missing.gguf")
			err := n.Start(context.Background(), l, nil)
			var se *StartError
			if !errors.As(err, &se) || !strings.Contains(se.Log, "missing.gguf") {
				t.Fatalf("start with a missing model: %v; want a StartError whose log names the file", err)
			}
			if err := n.Stop(context.Background(), l, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(managerCases[manager].file(serviceManagers[manager].unit(l.key()))); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("unit file after the stop: %v", err)
			}
		})
	}
}

// TestALaneStartedBeforeAServiceManagerStops: a lane started detached
// stops once the config names a manager, which does not run it: poolc
// signals it itself.
func TestALaneStartedBeforeAServiceManagerStops(t *testing.T) {
	withServiceManager(t)
	ctx := context.Background()
	set := testSettings(t)
	l := testLane(t, "cognition", 1000, "chat")
	before := NewNode(Local{}, set)
	stopAtEnd(t, before, l)
	if err := before.Start(ctx, l, nil); err != nil {
		t.Fatal(err)
	}
	obs, err := before.Observe(ctx, nil)
	if err != nil || len(obs.Lanes) != 1 {
		t.Fatalf("%+v %v", obs, err)
	}
	for _, manager := range []string{ServiceSystemd, ServiceLaunchd} {
		set.ServiceManager = manager
		after := NewNode(Local{}, set)
		if err := after.Start(ctx, l, nil); err != nil {
			t.Fatalf("%s: start of the running lane: %v", manager, err)
		}
		if again, _ := after.Observe(ctx, nil); len(again.Lanes) != 1 || again.Lanes[0].PID != obs.Lanes[0].PID {
			t.Fatalf("%s: the start ran another process: %+v", manager, again.Lanes)
		}
	}
	if err := NewNode(Local{}, set).Stop(ctx, l, nil); err != nil {
		t.Fatal(err)
	}
	if processLives(obs.Lanes[0].PID) {
		t.Errorf("pid %d survives the stop", obs.Lanes[0].PID)
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
