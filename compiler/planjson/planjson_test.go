package planjson_test

import (
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/compiler/planjson"
	"poolc.dev/poolc/pools"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// sparkLab is the example pool's bring-up plan, saved against no state,
// refreshed: the image-sync plugin saw the pod pool's image (a tag) name
// a digest and found the bytes each member's registry lacks.
func sparkLab(t testing.TB) *pools.SavedPlan {
	t.Helper()
	cfg, diags := compiler.Load([]string{"../../examples/spark-lab"})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	empty := &pools.State{}
	const digest = "sha256:5e0c7f3fd1b4a6b2c9d8e7f60a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d"
	empty.Images = []pools.MemberImage{
		{PodPool: "harness", Context: "pool-node-b", Image: "elanous-harness", Digest: digest, MissingBytes: 12_400_000},
		{PodPool: "harness", Context: "pool-node-c", Image: "elanous-harness", Digest: digest, MissingBytes: 3_200},
	}
	empty.Normalize()
	p, err := compiler.Plan(cfg, empty, compiler.PlanOptions{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return &pools.SavedPlan{FormatVersion: pools.SavedPlanFormatVersion, PoolcVersion: "test", ConfigHash: cfg.Hash,
		ConfigFiles: []string{"examples/spark-lab/spark-lab.hcl"}, StateLineage: pools.LineageOf(empty), StateHash: empty.ContentHash(),
		AssumeDown: []string{"spark-node-04"}, Plan: p}
}

// sparkLabSaved is sparkLab as its file.
func sparkLabSaved(t testing.TB) []byte {
	t.Helper()
	data, err := planjson.MarshalSaved(sparkLab(t))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// golden compares got with testdata/NAME, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s changed; if the change is meant, bump the format version where it breaks readers and run go test -update:\n%s", path, got)
	}
}

// The saved plan file and the plan's JSON form are public formats: the
// goldens show any change to them, whatever changed inside poolc.
func TestSavedPlanGolden(t *testing.T) {
	golden(t, "spark-lab.saved.json", sparkLabSaved(t))
}

func TestPlanGolden(t *testing.T) {
	data, err := json.MarshalIndent(planjson.FromPlan(sparkLab(t).Plan), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "spark-lab.plan.json", append(data, '\n'))
}

// A saved plan comes back from its file as it was.
func TestSavedPlanRoundTrip(t *testing.T) {
	want := sparkLab(t)
	got, err := planjson.ParseSaved("plan.json", sparkLabSaved(t))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the saved plan:\n got %+v\nwant %+v", got, want)
	}
}

func TestASavedPlanOfPoolcParses(t *testing.T) {
	saved := sparkLabSaved(t)
	p, err := planjson.ParseSaved("plan.json", saved)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Plan.Steps) == 0 {
		t.Fatal("no steps")
	}
}

func TestAMalformedSavedPlanIsRefused(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"format_version":1,"plan":{"steps":[{"id":"x","kind":"start"}]}}`, "step x: a start step needs its lane with a name and a node"},
		{`{"format_version":1,"plan":{"steps":[{"id":"r","kind":"route","route":{"alias":"a","lane":"cloud"},"depends_on":["later"]},{"id":"later","kind":"prefetch","prefetch":{}}]}}`, `step r depends on "later", which is not an earlier step`},
		{`{"format_version":1,"plan":{"steps":[{"id":"x","kind":"explode"}]}}`, `step x: unknown kind "explode"`},
		{`{"format_version":1,"plan":{"steps":[{"id":"m","kind":"image-sync"}]}}`, "a image-sync step needs its member"},
		{`{"format_version":1,"plan":{"steps":[{"kind":"stop"}]}}`, "step 1 has no ID"},
		{`{"format_version":1,"plan":{"after":{"routes":[{"alias":"a","lane":"l","node":"n"}]}}}`, `the fleet after the plan: alias "a" routes to lane "l" on node "n", which the state does not hold`},
		{`{"format_version":4,"plan":{}}`, "newer than this poolc reads"},
		{`{"format_version":1,"plan":{}}`, "does not bind the plan to the state it was made from"},
		{`{"format_version":2,"state_lineage":"none","plan":{}}`, "does not bind the plan to the state it was made from"},
		{"{\"format_version\":1,\n\"plan\":[}", "plan.json:2:9: invalid character"},
		{`{"plan":{}}`, "not a saved plan: no format_version"},
	} {
		_, err := planjson.ParseSaved("plan.json", []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one with %q", c.doc, err, c.want)
		}
	}
}

// FuzzParseSavedPlan: no input panics, and a plan that parses comes back
// the same from its own JSON.
func FuzzParseSavedPlan(f *testing.F) {
	saved := sparkLabSaved(f)
	f.Add(saved)
	f.Add([]byte(`{"format_version":1,"plan":{"steps":[{"id":"x","kind":"start","lane":{"name":"a","node":"b"}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := planjson.ParseSaved("fuzz.json", data)
		if err != nil {
			return
		}
		again, err := planjson.MarshalSaved(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := planjson.ParseSaved("again.json", again)
		if err != nil {
			t.Fatalf("a parsed plan does not parse again: %v", err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatal("a parsed plan changes when written and read again")
		}
	})
}
