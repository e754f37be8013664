package render

import (
	"io"
	"testing"

	"poolc.dev/poolc/compiler/planjson"
	"poolc.dev/poolc/pools"
)

// FuzzRenderSavedPlan: every plan a saved plan file may hold (whatever
// planjson.ParseSaved accepts) renders in each format without a panic,
// as `poolc show` does it.
func FuzzRenderSavedPlan(f *testing.F) {
	saved, err := planjson.MarshalSaved(&pools.SavedPlan{FormatVersion: pools.SavedPlanFormatVersion, StateLineage: pools.NoLineage, StateHash: (&pools.State{}).ContentHash(), Plan: bigPlan(f, 10)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(saved)
	f.Add([]byte(`{"format_version":1,"plan":{"steps":[{"id":"s","kind":"stop","lane":{"name":"a","node":"b"}},{"id":"r","kind":"route","route":{"alias":"x"},"depends_on":["s"]}],"interruptions":[{"alias":"x"}],"unplaced":[{"lane":"a","excluded":[{}]}],"unserved":[{}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := planjson.ParseSaved("fuzz.json", data)
		if err != nil {
			return
		}
		Text(io.Discard, s.Plan, TextOptions{Color: true})
		Markdown(io.Discard, s.Plan)
		if err := JSON(io.Discard, s.Plan, "fuzz"); err != nil {
			t.Fatal(err)
		}
	})
}
