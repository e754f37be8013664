package views

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"poolc.dev/poolc/membership"
	"poolc.dev/poolc/orchestrate"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
)

func TestNodeListViews(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ms := []membership.Member{
		{Name: "mac-studio", Cordon: pools.Drained},
		{Name: "spark-03", Live: true, Report: &membership.Report{Time: now.Add(-4 * time.Second), MemoryTotalGB: 128, MemoryFreeGB: 90.5,
			LlamaServers: []membership.Process{{}, {}}}},
	}
	var text bytes.Buffer
	if err := Members(&text, ms, now); err != nil {
		t.Fatal(err)
	}
	want := "NODE        STATUS  CORDON   MEMORY  FREE     LLAMA  REPORTED\n" +
		"mac-studio  down    drained  -       -        -      -\n" +
		"spark-03    up      -        128 GB  90.5 GB  2      4s ago\n"
	if text.String() != want {
		t.Errorf("text view:\n%s\nwant:\n%s", text.String(), want)
	}
	var js bytes.Buffer
	if err := MembersJSON(&js, nil); err != nil || js.String() != "[]\n" {
		t.Errorf("JSON view of no node: %q, %v; want an empty array", js.String(), err)
	}
}

func TestPodsStatusTextView(t *testing.T) {
	var b bytes.Buffer
	err := PodsStatus(&b, []orchestrate.MemberStatus{
		{Pool: "harness", Context: "pool-node-b", Namespace: "harness", Used: 3, Capacity: 8, Counted: true},
		{Pool: "harness", Context: "pool-node-c", Namespace: "harness", Capacity: 2},
		{Pool: "harness", Context: "pool-node-d", Namespace: "harness", Error: "connection refused"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "POOL     CONTEXT      NAMESPACE  USED  CAPACITY\n" +
		"harness  pool-node-b  harness    3     8\n" +
		"harness  pool-node-c  harness    ?     2\n" +
		"harness  pool-node-d  harness    -     -  connection refused\n"
	if b.String() != want {
		t.Errorf("text view:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestPluginsViewDashesEmptyColumns(t *testing.T) {
	var b bytes.Buffer
	Plugins(&b, []PluginRow{
		{Name: "sim", Status: "built-in default", Version: "devel", Kinds: "all", Serves: `node "a"`},
		{Name: "llama", Status: "built-in, not declared"},
	})
	want := "NAME   STATUS                  VERSION  STEP KINDS  SERVES    BINARY  SHA256\n" +
		"sim    built-in default        devel    all         node \"a\"  -       -\n" +
		"llama  built-in, not declared  -        -           -         -       -\n"
	if b.String() != want {
		t.Errorf("plugins view:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestApplyOutcomeViews(t *testing.T) {
	failed := runner.Result{Steps: []runner.StepResult{
		{ID: "start:chat@a", Outcome: runner.Done, Plugin: "sim"},
		{ID: "route:chat", Outcome: runner.Failed, Diagnostics: pools.Diagnostics{{Message: "gateway refused"}}},
	}}
	for _, asJSON := range []bool{false, true} {
		var out, errw bytes.Buffer
		Apply{Out: &out, Err: &errw, JSON: asJSON}.Outcome(failed, "1 done, 1 failed")
		if want := "route:chat failed (-): gateway refused\nApply failed: 1 done, 1 failed.\n"; out.String() != "" || errw.String() != want {
			t.Errorf("failed apply, json=%v: stdout %q, stderr %q; want stderr %q", asJSON, out.String(), errw.String(), want)
		}
	}
	done := runner.Result{Steps: failed.Steps[:1]}
	var out, errw bytes.Buffer
	Apply{Out: &out, Err: &errw}.Outcome(done, "")
	if out.String() != "\nApply complete: 1 step done.\n" || errw.String() != "" {
		t.Errorf("apply done: stdout %q, stderr %q", out.String(), errw.String())
	}
	out.Reset()
	Apply{Out: &out, Err: &errw, JSON: true}.Outcome(done, "")
	if out.String() != "" || errw.String() != "" {
		t.Errorf("apply done with --json: stdout %q, stderr %q; the summary event says it", out.String(), errw.String())
	}
}

func TestMayHaveRunViews(t *testing.T) {
	steps := []pools.MayHaveRun{{Step: "start:chat@a", Plugin: "x", Part: "lanes", Planned: true}}
	var out, errw bytes.Buffer
	Apply{Out: &out, Err: &errw}.MayHaveRun(steps, false)
	if want := "warning: " + steps[0].Why() + "; not sent again\n"; errw.String() != want || out.String() != "" {
		t.Errorf("text: stdout %q, stderr %q; want stderr %q", out.String(), errw.String(), want)
	}
	out.Reset()
	errw.Reset()
	Apply{Out: &out, Err: &errw, JSON: true}.MayHaveRun(steps, true)
	var e JSONEvent
	if err := json.Unmarshal(out.Bytes(), &e); err != nil || e.Event != "may-have-run" || e.Step != "start:chat@a" ||
		e.Message != steps[0].Why()+"; sending it again (--retry-uncertain)" || errw.String() != "" {
		t.Errorf("JSON: stdout %q (%v), stderr %q", out.String(), err, errw.String())
	}
}
