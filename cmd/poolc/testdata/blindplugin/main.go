// Command blindplugin is a runtime plugin the poolc tests build. It keeps
// what it did in .poolc/blind.jsonl beside the pool: one line per step it
// was sent, written before it acts, and the lanes it started.
//
// By default it observes nothing, as a webhook cannot: Describe declares no
// Capabilities.Observes. With POOLC_TEST_OBSERVES=lanes in its environment
// it observes lanes, reporting those its file says it started.
//
// The first time it is sent a start step it records the lane as started
// and then blocks until cancelled, so a test can kill poolc while the step
// is in flight; every later start returns at once.
//
// Its config has one field its schema marks sensitive, signing (a name no
// key rule of internal/redact catches). With leak = true it echoes its
// value everywhere a plugin's text can reach the operator: a Configure
// warning, an Observe warning, its stderr, progress, and a step failure;
// and after it the values of its env, which the pool file may mark
// sensitive itself.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"poolc.dev/poolc/plugins/sdk"
)

const schema = `
signing?: string @poolc(sensitive)
env?:   {[string]: string}
leak?:  bool | *false
`

type blind struct {
	mu    sync.Mutex
	file  string
	token string
	leak  bool
}

// record is a line of the plugin's file.
type record struct {
	Sent    string    `json:"sent,omitempty"`
	Started *sdk.Lane `json:"started,omitempty"`
}

func (b *blind) Describe(context.Context, sdk.DescribeRequest) sdk.DescribeResponse {
	var caps sdk.Capabilities
	if part := os.Getenv("POOLC_TEST_OBSERVES"); part != "" {
		caps.Observes = []string{part}
	}
	return sdk.DescribeResponse{Name: "blind", Version: "0.0.1", StepKinds: sdk.RuntimeKinds, ConfigSchema: schema, Capabilities: caps}
}

func (b *blind) Configure(_ context.Context, req sdk.ConfigureRequest) sdk.ConfigureResponse {
	var cfg struct {
		Token string            `json:"signing"`
		Leak  bool              `json:"leak"`
		Env   map[string]string `json:"env"`
	}
	if ds := sdk.DecodeConfig(schema, req.ConfigJSON, &cfg); ds.HasErrors() {
		return sdk.ConfigureResponse{Diagnostics: ds}
	}
	b.file, b.token, b.leak = filepath.Join(req.WorkDir, ".poolc", "blind.jsonl"), cfg.Token, cfg.Leak
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		b.token += " " + cfg.Env[k]
	}
	if b.leak {
		fmt.Fprintf(os.Stderr, "connecting with token %s\n", b.token)
		return sdk.ConfigureResponse{Diagnostics: sdk.Diagnostics{{Severity: sdk.Warning, Summary: "configured with token " + b.token}}}
	}
	return sdk.ConfigureResponse{}
}

func (b *blind) read() []record {
	f, err := os.Open(b.file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []record
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var r record
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

func (b *blind) write(r record) {
	os.MkdirAll(filepath.Dir(b.file), 0o755)
	f, err := os.OpenFile(b.file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	line, _ := json.Marshal(r)
	f.Write(append(line, '\n'))
	f.Sync()
}

func (b *blind) Observe(context.Context, sdk.ObserveRequest) sdk.ObserveResponse {
	b.mu.Lock()
	defer b.mu.Unlock()
	var resp sdk.ObserveResponse
	for _, r := range b.read() {
		if r.Started != nil {
			resp.Fleet.Lanes = append(resp.Fleet.Lanes, *r.Started)
		}
	}
	if b.leak {
		resp.Diagnostics = sdk.Diagnostics{{Severity: sdk.Warning, Summary: "observed with token " + b.token}}
	}
	return resp
}

func (b *blind) Apply(ctx context.Context, req sdk.ApplyRequest, progress sdk.ProgressFunc) sdk.ApplyResponse {
	b.mu.Lock()
	first := true
	for _, r := range b.read() {
		if r.Sent == req.Step.ID {
			first = false
		}
	}
	b.write(record{Sent: req.Step.ID})
	if req.Step.Kind == sdk.KindStart {
		lane := *req.Step.Lane
		lane.Loaded = lane.Residency != sdk.OnDemand
		b.write(record{Started: &lane})
	}
	b.mu.Unlock()
	if b.leak {
		progress(sdk.Progress{Message: "authenticating with " + b.token, Fraction: -1})
		return sdk.ApplyResponse{Diagnostics: sdk.Errorf(nil, "the endpoint refused token "+b.token)}
	}
	if req.Step.Kind == sdk.KindStart && first {
		progress(sdk.Progress{Message: "started; holding the step open", Fraction: -1})
		<-ctx.Done()
		return sdk.ApplyResponse{Diagnostics: sdk.Errorf(nil, "cancelled")}
	}
	return sdk.ApplyResponse{}
}

func main() { sdk.Serve(&blind{}) }
