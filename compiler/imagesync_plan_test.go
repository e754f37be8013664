package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/pools"
)

// A pod pool plans image-sync steps only when it names an image-sync
// plugin: without image_sync no plugin (not even the sim) serves its
// image sync and its members record no image; with image_sync = "sim"
// each member with a registry gets one.
func TestImageSyncIsPlannedOnlyWhereThePoolNamesAPlugin(t *testing.T) {
	for _, tc := range []struct {
		line  string
		syncs int
	}{{"", 0}, {`image_sync = "sim"`, 1}} {
		dir := t.TempDir()
		src := `pool "lab" {
  pod_pool "jobs" {
    image   = "runner:1"
    members = "k1:2#k3d-reg:5000,k2:2"
    ` + tc.line + `
  }
}
`
		if err := os.WriteFile(filepath.Join(dir, "pool.hcl"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, diags := Load([]string{dir})
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		p, err := Plan(cfg, &pools.State{Pool: "lab"}, PlanOptions{Now: time.Unix(0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		syncs := 0
		for _, s := range p.Steps {
			if s.Kind == pools.StepImageSync {
				syncs++
			}
		}
		targets := 0
		for _, tg := range cfg.Pool.Targets() {
			if tg.Role == "image_sync" {
				targets++
			}
		}
		if syncs != tc.syncs || targets != tc.syncs {
			t.Errorf("pod pool with %q: %d image-sync steps and %d image_sync targets, want %d", strings.TrimSpace(tc.line), syncs, targets, tc.syncs)
		}
	}
}
