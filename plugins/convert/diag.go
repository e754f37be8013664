package convert

import (
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// StepDiagnostics turns a plugin's findings about a step into poolc's: the
// message is the summary, followed by ": " and the detail when there is
// one; the path, if any, is kept as it is.
func StepDiagnostics(ds sdk.Diagnostics) pools.Diagnostics {
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
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		out[i] = pools.Diagnostic{Severity: sev, Message: msg, Path: pools.Path(d.Path)}
	}
	return out
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
