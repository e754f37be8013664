package host

import (
	"strings"

	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// Diagnostics turns the diagnostics of the named plugin into poolc's. A
// diagnostic's attribute path, which names an attribute of the plugin's
// config block, becomes the full path plugin NAME config ..., so the
// caller can attach the file:line:col where that attribute was written.
// The detail, when there is one, follows the summary on indented lines.
func Diagnostics(plugin string, ds sdk.Diagnostics) pools.Diagnostics {
	if len(ds) == 0 {
		return nil
	}
	out := make(pools.Diagnostics, len(ds))
	for i, d := range ds {
		sev := pools.Error
		if d.Severity == sdk.Warning {
			sev = pools.Warning
		}
		msg := d.Summary
		if detail := strings.TrimSpace(d.Detail); detail != "" {
			msg += "\n  " + strings.ReplaceAll(detail, "\n", "\n  ")
		}
		var path pools.Path
		if d.Path != nil {
			path = append(pools.Path{"plugin", plugin, "config"}, d.Path...)
		}
		out[i] = pools.Diagnostic{Severity: sev, Code: "plugin", Message: msg, Path: path}
	}
	return out
}
