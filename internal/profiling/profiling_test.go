package profiling

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStartWritesTheProfilesTheEnvironmentAsksFor(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{CPUEnv: filepath.Join(dir, "cpu.pprof"), MemEnv: filepath.Join(dir, "mem.pprof")}
	for k, v := range env {
		t.Setenv(k, v)
	}
	var warnings []error
	stop := Start(func(err error) { warnings = append(warnings, err) })
	for k := range env {
		if v, ok := os.LookupEnv(k); ok {
			t.Errorf("%s=%s is still set: the plugin processes would write over the profile", k, v)
		}
	}
	sum := 0
	for i := range 1_000_000 {
		sum += i
	}
	_ = sum
	stop()
	if len(warnings) > 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	for _, p := range env {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("profile %s: %v (size %v)", p, err, st)
		}
	}
}

func TestAProfileThatCannotBeWrittenIsAWarningNotAFailure(t *testing.T) {
	t.Setenv(CPUEnv, filepath.Join(t.TempDir(), "no", "such", "dir", "cpu.pprof"))
	var warnings []error
	Start(func(err error) { warnings = append(warnings, err) })()
	if len(warnings) != 1 {
		t.Fatalf("warnings %v, want one naming %s", warnings, CPUEnv)
	}
}

func TestNoEnvironmentNoProfile(t *testing.T) {
	t.Setenv(CPUEnv, "")
	t.Setenv(MemEnv, "")
	Start(func(err error) { t.Fatal(err) })()
}
