package convert

import (
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// FromSDK turns a plugin's findings into poolc's, keeping each one's
// severity; one gives the rest (code, message, path) of each.
func FromSDK(ds sdk.Diagnostics, one func(sdk.Diagnostic) pools.Diagnostic) pools.Diagnostics {
	if len(ds) == 0 {
		return nil
	}
	out := make(pools.Diagnostics, len(ds))
	for i, d := range ds {
		out[i] = one(d)
		out[i].Severity = pools.Error
		if d.Severity == sdk.Warning {
			out[i].Severity = pools.Warning
		}
	}
	return out
}

// StepDiagnostics turns a plugin's findings about a step into poolc's: the
// message is the summary, followed by ": " and the detail when there is
// one; the path, if any, is kept as it is.
func StepDiagnostics(ds sdk.Diagnostics) pools.Diagnostics {
	return FromSDK(ds, func(d sdk.Diagnostic) pools.Diagnostic {
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		return pools.Diagnostic{Message: msg, Path: pools.Path(d.Path)}
	})
}

// SDKDiagnostics is the reverse of StepDiagnostics, for a built-in
// actuator that works in poolc's terms: each message becomes a summary.
func SDKDiagnostics(ds pools.Diagnostics) sdk.Diagnostics {
	if len(ds) == 0 {
		return nil
	}
	out := make(sdk.Diagnostics, len(ds))
	for i, d := range ds {
		sev := sdk.Error
		if d.Severity == pools.Warning {
			sev = sdk.Warning
		}
		out[i] = sdk.Diagnostic{Severity: sev, Summary: d.Message, Path: []string(d.Path)}
	}
	return out
}

// Progress passes a plugin's progress reports on to progress, which
// hears them in poolc's terms; it is nil when progress is.
func Progress(progress pools.ProgressFunc) sdk.ProgressFunc {
	if progress == nil {
		return nil
	}
	return func(p sdk.Progress) {
		progress(pools.Progress{Message: p.Message, Fraction: p.Fraction, BytesDone: p.BytesDone, BytesTotal: p.BytesTotal})
	}
}

// SDKProgress is the reverse of Progress, for a built-in actuator that
// reports in poolc's terms to a plugin's caller.
func SDKProgress(progress sdk.ProgressFunc) pools.ProgressFunc {
	if progress == nil {
		return nil
	}
	return func(p pools.Progress) {
		progress(sdk.Progress{Message: p.Message, Fraction: p.Fraction, BytesDone: p.BytesDone, BytesTotal: p.BytesTotal})
	}
}
