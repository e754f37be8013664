// Package sdk is what a third party needs to write a poolc actuator plugin
// in Go: implement Actuator and call Serve from main.
//
//	type webhook struct{ ... }
//
//	func (w *webhook) Describe(ctx context.Context, req sdk.DescribeRequest) sdk.DescribeResponse { ... }
//	func (w *webhook) Configure(ctx context.Context, req sdk.ConfigureRequest) sdk.ConfigureResponse { ... }
//	func (w *webhook) Observe(ctx context.Context, req sdk.ObserveRequest) sdk.ObserveResponse { ... }
//	func (w *webhook) Apply(ctx context.Context, req sdk.ApplyRequest, progress sdk.ProgressFunc) sdk.ApplyResponse { ... }
//
//	func main() { sdk.Serve(&webhook{}) }
//
// Every call takes a context and a request struct and returns a response
// struct with diagnostics, so fields can be added without breaking a
// signature. The wire protocol (gRPC, served with go-plugin) is described
// in docs/PLUGINS.md for plugins in other languages.
package sdk

import (
	"context"
)

// ProtocolVersion is the version of the actuator protocol. It changes only
// on breaking changes; poolc refuses a plugin that speaks another. Version
// 1 sent steps and fleets as poolc's internal JSON; version 2 has typed
// messages (types.go); version 3 reports what could not be observed
// (Fleet.Unobserved) where version 2 called a node it could not reach
// down.
const ProtocolVersion = 3

// Actuator observes and changes the targets it serves (nodes, the gateway,
// pod-pool members), one step at a time, for the step kinds it declares.
type Actuator interface {
	// Describe says who the plugin is and what it handles. It is called
	// before Configure and must not depend on configuration.
	Describe(ctx context.Context, req DescribeRequest) DescribeResponse
	// Configure hands the plugin its configuration (the config block of
	// its plugin declaration) and the inventory of its targets.
	Configure(ctx context.Context, req ConfigureRequest) ConfigureResponse
	// Observe returns the current state of the plugin's targets, so poolc
	// plans from the world as it is. A target it cannot observe goes in
	// Fleet.Unobserved with its cause, never left out as if empty.
	Observe(ctx context.Context, req ObserveRequest) ObserveResponse
	// Apply carries out one step, reporting progress as it goes. It must
	// return when ctx is cancelled, undoing what it can.
	Apply(ctx context.Context, req ApplyRequest, progress ProgressFunc) ApplyResponse
}

// Severity says whether a diagnostic is an error or a warning.
type Severity int

// The severities.
const (
	// Error is the severity of a diagnostic that fails what reported it.
	Error Severity = iota
	// Warning is the severity of a diagnostic shown to the user that
	// fails nothing.
	Warning
)

// Diagnostic is a finding of the plugin. Path, when set, names an
// attribute of the plugin's config block (["url"], ["headers", "x"]), and
// poolc shows the file:line:col where it was written.
type Diagnostic struct {
	Severity Severity
	Summary  string
	Detail   string
	Path     []string
}

// Diagnostics is a list of findings.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Errorf returns diagnostics holding one error.
func Errorf(path []string, summary string) Diagnostics {
	return Diagnostics{{Severity: Error, Summary: summary, Path: path}}
}

// DescribeRequest asks a plugin to describe itself.
type DescribeRequest struct{}

// DescribeResponse says who the plugin is: its name and version, the step
// kinds it handles, the CUE schema of its config block, if any (poolc
// checks the block against it; DecodeConfig decodes it), and what it can
// observe.
type DescribeResponse struct {
	Name         string
	Version      string
	StepKinds    []StepKind
	ConfigSchema string
	Capabilities Capabilities
	Diagnostics  Diagnostics
}

// Capabilities say what a plugin can tell poolc. Observes lists the parts
// of a fleet its Observe reports for its targets (the Observe* constants);
// poolc keeps its own state of the rest. ApplyObserves says that
// ApplyResponse.Observed holds the step's target as it is afterwards.
type Capabilities struct {
	Observes      []string
	ApplyObserves bool
}

// The parts of a fleet a plugin may observe, for Capabilities.Observes.
const (
	// ObserveNodes says Observe reports its nodes.
	ObserveNodes = "nodes"
	// ObserveLanes says Observe reports the lanes running on its nodes.
	ObserveLanes = "lanes"
	// ObservePrefetched says Observe reports the models prefetched to its
	// nodes.
	ObservePrefetched = "prefetched"
	// ObserveRoutes says Observe reports the gateway's routes.
	ObserveRoutes = "routes"
	// ObserveMembers says Observe reports a pod pool's members.
	ObserveMembers = "members"
	// ObserveImages says Observe reports the images synced to members'
	// registries.
	ObserveImages = "images"
)

// ConfigureRequest carries the plugin's configuration: the pool's name, the
// config block as JSON (only the plugin's own settings), the directory of
// the pool's first file for resolving relative paths, and the inventory of
// the targets the plugin serves.
type ConfigureRequest struct {
	Pool       string
	ConfigJSON []byte
	WorkDir    string
	Inventory  Inventory
}

// ConfigureResponse reports problems with the configuration.
type ConfigureResponse struct {
	Diagnostics Diagnostics
}

// ObserveRequest asks for the current state.
type ObserveRequest struct{}

// ObserveResponse is what the plugin sees of its targets: the parts of
// Fleet its Capabilities.Observes names, and only for its targets.
type ObserveResponse struct {
	Fleet       Fleet
	Diagnostics Diagnostics
}

// ApplyRequest asks for one step.
type ApplyRequest struct {
	Step Step
}

// Progress is a progress report of a step: a message and, when known, the
// fraction done (0..1, or -1 for unknown).
type Progress struct {
	Message  string
	Fraction float64
	// BytesDone and BytesTotal count the bytes moved so far and to move
	// in all, for a step that moves data (both 0 otherwise); views show
	// them as "12.4 MB of 30.1 MB".
	BytesDone, BytesTotal int64
}

// ProgressFunc receives progress reports; it may be called from any
// goroutine while Apply runs.
type ProgressFunc func(Progress)

// ApplyResponse is the outcome of a step: success when Diagnostics has no
// error. Retryable marks a failure worth trying again (a timeout, a busy
// peer), not a wrong request. Observed, from a plugin whose Capabilities
// say ApplyObserves, is the step's target as it is afterwards (the lane,
// none after a stop; the route; the prefetched file; the member with the
// image its registry serves); poolc records it and fails a step whose
// Observed contradicts it.
type ApplyResponse struct {
	Retryable   bool
	Diagnostics Diagnostics
	Observed    *Fleet
}
