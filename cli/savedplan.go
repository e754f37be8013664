package cli

import (
	"os"
	"path/filepath"
)

// savedPlanArg reports whether apply's arguments are one saved plan: a
// single regular file whose name does not end in .hcl or .cue (pool files,
// so a malformed one is reported as a pool file). Whatever else it holds
// is then read as a saved plan, and a file that is not one (garbage, a
// plan cut short) is reported as not a saved plan.
func savedPlanArg(args []string) bool {
	if len(args) != 1 {
		return false
	}
	switch filepath.Ext(args[0]) {
	case ".hcl", ".cue":
		return false
	}
	st, err := os.Stat(args[0])
	return err == nil && st.Mode().IsRegular()
}

// planFilePaths writes a configuration's files as a saved plan records
// them: relative to the plan file's directory, or absolute where no
// relative path leads there, so that the plan applies from any working
// directory.
func planFilePaths(planPath string, files []string) []string {
	dir, err := filepath.Abs(filepath.Dir(planPath))
	out := make([]string, len(files))
	for i, f := range files {
		abs, aerr := filepath.Abs(f)
		out[i] = abs
		if err != nil || aerr != nil {
			continue
		}
		if rel, rerr := filepath.Rel(dir, abs); rerr == nil {
			out[i] = rel
		}
	}
	return out
}

// resolvePlanFiles is the inverse of planFilePaths: the saved plan's
// files as paths from the working directory.
func resolvePlanFiles(planPath string, files []string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		if filepath.IsAbs(f) {
			out[i] = f
			continue
		}
		out[i] = filepath.Join(filepath.Dir(planPath), f)
	}
	return out
}
