package render

import (
	"encoding/json"
	"io"

	"poolc.dev/poolc/compiler/planjson"
	"poolc.dev/poolc/pools"
)

// JSONPlan is the JSON form of a plan (format_version 1): planjson.Plan
// with the poolc version, a summary and the state diff. Fields are only
// added within a version; a change of meaning or a removal bumps it.
//
//	format_version  1
//	poolc_version   the poolc that planned
//	pool, profile   the pool and the profile in force
//	planned_at      RFC 3339 time the plan was made
//	summary         {text, changes, counts{kind: n}, transfer_gb, interruptions}
//	steps[]         {id, kind, target, node, depends_on[], reason,
//	                 estimate{seconds, transfer_gb, transfer_bytes, memory_gb}, and the detail of
//	                 its kind: lane, from, route, prefetch or member}
//	interruptions[] {alias, lane, seconds, reason}
//	unplaced[]      {lane, residency, memory_gb, excluded[{node, why}]}
//	unserved[]      {alias, why}
//	may_have_run[]  {step, plugin, part, planned}: steps a killed apply had
//	                in flight whose plugin does not observe whether they
//	                ran; absent when there are none
//	state_diff      unified diff of the canonical state text, "" if none
//	before, after   the fleets: nodes, lanes, routes, prefetched, members
type JSONPlan struct {
	planjson.Plan
	PoolcVersion string      `json:"poolc_version"`
	Summary      JSONSummary `json:"summary"`
	StateDiff    string      `json:"state_diff"`
}

// JSONSummary is the plan's summary for scripts.
type JSONSummary struct {
	Text          string                 `json:"text"`
	Changes       bool                   `json:"changes"`
	Counts        map[pools.StepKind]int `json:"counts"`
	TransferGB    float64                `json:"transfer_gb"`
	Interruptions int                    `json:"interruptions"`
}

// NewJSONPlan wraps a plan for JSON output.
func NewJSONPlan(p *pools.Plan, version string) JSONPlan {
	counts := map[pools.StepKind]int{}
	for _, s := range p.Steps {
		counts[s.Kind]++
	}
	return JSONPlan{
		Plan: planjson.FromPlan(p), PoolcVersion: version,
		Summary: JSONSummary{Text: p.Summary(), Changes: !p.Empty(), Counts: counts,
			TransferGB: p.TransferGB(), Interruptions: len(p.Interruptions)},
		StateDiff: UnifiedDiff("current", "planned", StateText(p.Before), StateText(p.After)),
	}
}

// JSON writes the plan as indented JSON.
func JSON(w io.Writer, p *pools.Plan, version string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(NewJSONPlan(p, version))
}
