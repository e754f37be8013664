package schema

import (
	"testing"

	"cuelang.org/go/cue/ast"
)

func TestRootReadsEverySchemaDefinition(t *testing.T) {
	root := Root()
	pool := root.Field("pool")
	if pool == nil || !pool.Required || pool.Spec.Kinds != KindMap {
		t.Fatalf("#File.pool = %+v, want a required map", pool)
	}
	p := pool.Spec.Elem
	lane := p.Field("lane").Spec.Elem
	res := lane.Field("residency").Spec
	if len(res.Enum) != 3 || res.Default == nil || res.Default.Str != "on-demand" {
		t.Errorf("lane.residency = %+v, want three values, default on-demand", res)
	}
	port := lane.Field("port").Spec
	if !port.Int || port.Min.Value != 1 || port.Max.Value != 65535 || !lane.Field("port").Required {
		t.Errorf("lane.port = %+v %+v %+v", port, port.Min, port.Max)
	}
	ceiling := p.Field("guard").Spec.Field("ceiling").Spec
	if ceiling.Default == nil || ceiling.Default.Num != 0.90 || ceiling.Min.Inclusive || !ceiling.Max.Inclusive {
		t.Errorf("guard.ceiling = %+v", ceiling)
	}
	members := p.Field("pod_pool").Spec.Elem.Field("members").Spec
	if members.Kinds != KindString|KindList || members.Elem.Kinds != KindString {
		t.Errorf("pod_pool.members kinds = %b", members.Kinds)
	}
	if cfg := p.Field("plugin").Spec.Elem.Field("config").Spec; cfg.Kinds != KindAny {
		t.Errorf("plugin.config kinds = %b, want any", cfg.Kinds)
	}
	if lane.Field("model").Doc == "" || len(lane.Field("model").Spec.Patterns) != 1 {
		t.Errorf("lane.model = %+v", lane.Field("model"))
	}
}

func TestReadRefusesWhatTheCheckerCannotEnforce(t *testing.T) {
	for _, src := range []string{
		`#T: {a: string | int & >3}`,
		`#T: {a: [string, int]}`,
		`#T: {a: strings.MinRunes(3)}`,
		`#T: {a: {b: int} & {c: int}}`,
	} {
		if _, err := Read("t.cue", []byte(src), "#T"); err == nil {
			t.Errorf("Read(%q) succeeded, want an error", src)
		}
	}
}

// Read interprets the definition named top of a CUE schema source as a
// Spec. It understands the subset of CUE the schema uses (definitions,
// required and optional fields, pattern constraints, list and struct
// literals, the basic types, bounds, regular expressions, enumerations and
// defaults) and fails on anything else, so the schema cannot say more than
// the checker enforces.
func Read(filename string, src []byte, top string) (*Spec, error) {
	r := &reader{defs: map[string]*ast.Field{}, specs: map[string]*Spec{}}
	if err := r.parse(filename, src); err != nil {
		return nil, err
	}
	return r.def(top)
}
