package cli

import (
	"runtime/debug"
	"testing"
)

// poolc version says which build it is from the build information Go
// stamps: the module version and the VCS revision, its time and whether
// the tree was modified; "devel" and a reason only when Go stamped none.
func TestVersionFromBuildInfo(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "24e4545a21de0bda06010e7dc6813fbbd94944f4"},
		{Key: "vcs.time", Value: "2026-12-01T17:24:26Z"},
	}
	for _, c := range []struct {
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"v0.0.0-20261201172426-24e4545a21de", vcs,
			"v0.0.0-20261201172426-24e4545a21de (git 24e4545a21de0bda06010e7dc6813fbbd94944f4, 2026-12-01T17:24:26Z)"},
		{"v1.2.0", append(vcs[:3:3], debug.BuildSetting{Key: "vcs.modified", Value: "true"}),
			"v1.2.0 (git 24e4545a21de0bda06010e7dc6813fbbd94944f4, 2026-12-01T17:24:26Z, modified)"},
		{"(devel)", nil, "devel (no VCS revision: built outside a checkout or with -buildvcs=false)"},
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "poolc.dev/poolc", Version: c.version}, Settings: c.settings}
		if got := versionOf(bi); got != c.want {
			t.Errorf("versionOf(%s, %v) = %q, want %q", c.version, c.settings, got, c.want)
		}
	}
}
