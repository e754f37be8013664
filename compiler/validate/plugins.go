package validate

import (
	"path/filepath"
	"strings"

	"poolc.dev/poolc/pools"
)

// plugins checks that poolc never runs a binary nobody vouched for: an
// external plugin is found by name in the plugin directories, or its path
// is pinned by sha256. A path is written in the pool (perhaps by the author
// of a pull request) and may point anywhere, at a binary in the repository
// or at a system tool; unpinned, whatever is there would run.
func (v *validator) plugins() {
	for _, pl := range v.p.Plugins {
		if pl.Builtin || pl.Path == "" || pl.SHA256 != "" || insidePluginDir(pl.Path) {
			continue
		}
		v.errorf("plugin-unpinned", pools.Path{"plugin", pl.Name, "path"}, "plugin %q: path %q is outside the plugin directories (%s, $POOLC_PLUGIN_PATH), so it must be pinned: add sha256 = \"...\" (the output of sha256sum %s), or leave path out and put the binary in a plugin directory as %s", pl.Name, pl.Path, pools.PluginDir, pl.Path, pools.PluginBinaryPrefix+pl.Name)
	}
}

// insidePluginDir reports whether a relative path stays inside the pool's
// own plugin directory.
func insidePluginDir(path string) bool {
	if filepath.IsAbs(path) {
		return false
	}
	clean := filepath.ToSlash(filepath.Clean(path))
	return strings.HasPrefix(clean, pools.PluginDir+"/")
}
