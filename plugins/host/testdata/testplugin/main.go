// Command testplugin is the plugin the host tests build and run. It is
// "test", or NAME when run as `testplugin plugin-serve NAME` (a built-in).
//
// It declares every step kind and observes lanes (a lane "chat" on n1).
// Configure: {"fail": true} is an error at ["fail"]; {"warn": "x"} a
// warning at ["warn"]. Apply: start reports progress and succeeds; drain
// fails, retryably, at ["endpoint"]; every other kind reports "waiting pid N" and
// blocks until cancelled, or until SIGUSR1, on which the process exits
// with status 2.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"poolc.dev/poolc/plugins/sdk"
)

type testPlugin struct{ name string }

func (p *testPlugin) Describe(context.Context, sdk.DescribeRequest) sdk.DescribeResponse {
	return sdk.DescribeResponse{Name: p.name, Version: "0.0.1", StepKinds: sdk.AllStepKinds(),
		Capabilities: sdk.Capabilities{Observes: []string{sdk.ObserveLanes}}}
}

func (p *testPlugin) Configure(_ context.Context, req sdk.ConfigureRequest) sdk.ConfigureResponse {
	fmt.Fprintf(os.Stderr, "configured for pool %s in %s\n", req.Pool, req.WorkDir)
	var cfg struct {
		Fail bool   `json:"fail"`
		Warn string `json:"warn"`
	}
	if err := json.Unmarshal(req.ConfigJSON, &cfg); err != nil {
		return sdk.ConfigureResponse{Diagnostics: sdk.Errorf(nil, "config: "+err.Error())}
	}
	var ds sdk.Diagnostics
	if cfg.Fail {
		ds = append(ds, sdk.Errorf([]string{"fail"}, "fail is set")...)
	}
	if cfg.Warn != "" {
		ds = append(ds, sdk.Diagnostic{Severity: sdk.Warning, Summary: "warn is " + cfg.Warn, Path: []string{"warn"}})
	}
	return sdk.ConfigureResponse{Diagnostics: ds}
}

func (p *testPlugin) Observe(context.Context, sdk.ObserveRequest) sdk.ObserveResponse {
	return sdk.ObserveResponse{Fleet: sdk.Fleet{Lanes: []sdk.Lane{{Name: "chat", Node: sdk.Node{Name: "n1"}, Model: sdk.Model{Name: "m", MemoryGB: 30},
		Port: 8081, Residency: sdk.KeepWarm, Loaded: true}}}}
}

func (p *testPlugin) Apply(ctx context.Context, req sdk.ApplyRequest, progress sdk.ProgressFunc) sdk.ApplyResponse {
	switch req.Step.Kind {
	case sdk.KindStart:
		progress(sdk.Progress{Message: "loading " + req.Step.Target, Fraction: 0.5})
		return sdk.ApplyResponse{}
	case sdk.KindDrain:
		return sdk.ApplyResponse{Retryable: true, Diagnostics: sdk.Errorf([]string{"endpoint"}, "endpoint is busy")}
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	progress(sdk.Progress{Message: fmt.Sprintf("waiting pid %d", os.Getpid()), Fraction: -1})
	select {
	case <-usr1:
		os.Exit(2)
	case <-ctx.Done():
	}
	return sdk.ApplyResponse{Diagnostics: sdk.Errorf(nil, "cancelled")}
}

func main() {
	name := "test"
	if len(os.Args) == 3 && os.Args[1] == "plugin-serve" {
		name = os.Args[2]
	}
	sdk.Serve(&testPlugin{name: name})
}
