package host

import (
	"strings"

	"poolc.dev/poolc/plugins/convert"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// Diagnostics turns the diagnostics of the named plugin into poolc's. A
// diagnostic's attribute path, which names an attribute of the plugin's
// config block, becomes the full path plugin NAME config ..., so the
// caller can attach the file:line:col where that attribute was written.
// The detail, when there is one, follows the summary on indented lines.
func Diagnostics(plugin string, ds sdk.Diagnostics) pools.Diagnostics {
	return convert.FromSDK(ds, func(d sdk.Diagnostic) pools.Diagnostic {
		msg := d.Summary
		if detail := strings.TrimSpace(d.Detail); detail != "" {
			msg += "\n  " + strings.ReplaceAll(detail, "\n", "\n  ")
		}
		var path pools.Path
		if d.Path != nil {
			path = append(pools.Path{"plugin", plugin, "config"}, d.Path...)
		}
		return pools.Diagnostic{Code: "plugin", Message: msg, Path: path}
	})
}
