// Package builtin lists the actuators shipped inside the poolc binary.
// They still run out of process: poolc re-executes itself as
// `poolc plugin-serve NAME`, so a crash in an actuator never takes poolc
// down.
package builtin

import (
	"sort"

	"poolc.dev/poolc/plugins/haproxy"
	"poolc.dev/poolc/plugins/imagesync"
	"poolc.dev/poolc/plugins/kube"
	"poolc.dev/poolc/plugins/llama"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/plugins/simactuator"
)

var registry = map[string]func(version string) sdk.Actuator{
	"sim":                func(v string) sdk.Actuator { return simactuator.New(v) },
	"llama":              func(v string) sdk.Actuator { return llama.NewActuator(v) },
	"haproxy":            func(v string) sdk.Actuator { return haproxy.NewActuator(v) },
	imagesync.PluginName: func(v string) sdk.Actuator { return imagesync.NewActuator(v) },
	kube.PluginName:      func(v string) sdk.Actuator { return kube.NewActuator(v) },
}

// New returns the built-in actuator of that name, reporting the given
// version.
func New(name, version string) (sdk.Actuator, bool) {
	f, ok := registry[name]
	if !ok {
		return nil, false
	}
	return f(version), true
}

// Names lists the built-in actuators.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
