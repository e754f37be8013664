package pools

// Progress is a progress report of a step as it runs: a message and, when
// known, the fraction done (0..1, or -1 for unknown). BytesDone and
// BytesTotal count the bytes moved so far and to move in all, for a step
// that moves data (both 0 otherwise).
type Progress struct {
	Message               string
	Fraction              float64
	BytesDone, BytesTotal int64
}

// ProgressFunc receives the progress reports of a step; it may be called
// from any goroutine while the step runs.
type ProgressFunc func(Progress)

// StepFailure returns diagnostics holding one error that explains why a
// step failed, with no code or path (a step's findings are about the
// step, not an attribute of the configuration).
func StepFailure(message string) Diagnostics {
	return Diagnostics{{Severity: Error, Message: message}}
}
