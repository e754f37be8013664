package views

import (
	"bytes"
	"testing"
	"time"

	"poolc.dev/poolc/membership"
	"poolc.dev/poolc/orchestrate"
	"poolc.dev/poolc/pools"
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
