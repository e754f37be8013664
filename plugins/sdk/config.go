package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"

	"poolc.dev/poolc/internal/redact"
)

// CheckConfig checks a config block (JSON, as Configure receives it)
// against a plugin's CUE schema (DescribeResponse.ConfigSchema): an
// attribute the schema does not declare, a value of the wrong type or out
// of range, a required attribute left out. It returns the block with the
// schema's defaults filled in, as JSON, and one error diagnostic per
// problem, whose Path names the attribute (poolc shows the file:line:col
// where it was written). An empty schema accepts any JSON object. The
// values of fields the schema marks sensitive (SensitiveAttr), and of
// keys that name credentials, never appear in its diagnostics.
func CheckConfig(schema string, configJSON []byte) ([]byte, Diagnostics) {
	out, ds := checkConfig(schema, configJSON)
	if len(ds) > 0 {
		var config map[string]any
		json.Unmarshal(configJSON, &config)
		r := redact.ForConfig(config, SensitivePaths(schema)...)
		for i := range ds {
			ds[i].Summary, ds[i].Detail = r.String(ds[i].Summary), r.String(ds[i].Detail)
		}
	}
	return out, ds
}

func checkConfig(schema string, configJSON []byte) ([]byte, Diagnostics) {
	if len(bytes.TrimSpace(configJSON)) == 0 {
		configJSON = []byte("{}")
	}
	if strings.TrimSpace(schema) == "" {
		var obj map[string]any
		if err := json.Unmarshal(configJSON, &obj); err != nil {
			return nil, Errorf(nil, "the config block is not a JSON object: "+err.Error())
		}
		return configJSON, nil
	}
	ctx := cuecontext.New()
	sch := ctx.CompileString("close({\n" + schema + "\n})")
	if err := sch.Err(); err != nil {
		return nil, Errorf(nil, "the plugin's config schema does not compile: "+cueerrors.Details(err, nil))
	}
	data := ctx.CompileBytes(configJSON)
	if err := data.Err(); err != nil {
		return nil, Errorf(nil, "the config block is not JSON: "+cueerrors.Details(err, nil))
	}
	unknown := unknownFields(sch, data, nil)
	v := withDefaults(sch.Unify(data), sch, data)
	if err := v.Validate(cue.All(), cue.Concrete(true), cue.Final()); err != nil || len(unknown) > 0 {
		return nil, merge(configErrors(err), unknown)
	}
	out, err := v.MarshalJSON()
	if err != nil {
		return nil, Errorf(nil, "the config block cannot be written as JSON: "+err.Error())
	}
	return out, nil
}

// unknownFields names the attributes of the block, at every level, that
// the schema does not declare, with those it does.
func unknownFields(sch, data cue.Value, path []string) Diagnostics {
	it, err := data.Fields()
	if err != nil || sch.IncompleteKind() != cue.StructKind {
		return nil
	}
	var ds Diagnostics
	for it.Next() {
		name := it.Selector().Unquoted()
		at := append(slices.Clone(path), name)
		if !sch.Allows(cue.Str(name)) {
			ds = append(ds, Diagnostic{Severity: Error, Path: at,
				Summary: fmt.Sprintf("%s: not allowed: the plugin has no such setting (it has %s)", strings.Join(at, "."), settings(sch))})
			continue
		}
		ds = append(ds, unknownFields(sch.LookupPath(cue.MakePath(cue.Str(name))), it.Value(), at)...)
	}
	return ds
}

// settings lists the attributes a schema declares.
func settings(sch cue.Value) string {
	var names []string
	if it, err := sch.Fields(cue.Optional(true)); err == nil {
		for it.Next() {
			if it.Selector().IsString() {
				names = append(names, it.Selector().Unquoted())
			}
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// merge adds to ds the diagnostics of more about attributes ds does not
// mention.
func merge(ds, more Diagnostics) Diagnostics {
	for _, d := range more {
		if !slices.ContainsFunc(ds, func(x Diagnostic) bool { return slices.Equal(x.Path, d.Path) }) {
			ds = append(ds, d)
		}
	}
	return ds
}

// withDefaults fills in v the optional attributes of the schema that the
// block leaves out and whose schema has a default (timeout?: number | *30),
// at every level of nesting.
func withDefaults(v, sch, data cue.Value) cue.Value {
	it, err := sch.Fields(cue.Optional(true))
	if err != nil {
		return v
	}
	for it.Next() {
		sel := it.Selector()
		if !sel.IsString() {
			continue
		}
		name := cue.MakePath(cue.Str(sel.Unquoted()))
		given := data.LookupPath(name)
		switch {
		case !given.Exists():
			if d, ok := it.Value().Default(); ok && d.IsConcrete() {
				v = v.FillPath(name, d)
			}
		case it.Value().IncompleteKind() == cue.StructKind:
			v = v.FillPath(name, withDefaults(v.LookupPath(name), it.Value(), given))
		}
	}
	return v
}

// configErrors turns CUE's errors into diagnostics, one per attribute:
// of the messages about an attribute it keeps the one that says what is
// wrong with the value given, not the summary of a disjunction nor the
// conflict with the default that was not taken.
func configErrors(err error) Diagnostics {
	if err == nil {
		return nil
	}
	var order []string
	paths := map[string][]string{}
	msgs := map[string][]string{}
	for _, e := range cueerrors.Errors(err) {
		path := e.Path()
		key := strings.Join(path, "\x1f")
		if _, ok := msgs[key]; !ok {
			order = append(order, key)
			paths[key] = path
		}
		format, args := e.Msg()
		msgs[key] = append(msgs[key], fmt.Sprintf(format, args...))
	}
	var ds Diagnostics
	for _, key := range order {
		msg := best(msgs[key])
		if p := paths[key]; len(p) > 0 {
			msg = strings.Join(p, ".") + ": " + msg
		}
		ds = append(ds, Diagnostic{Severity: Error, Summary: msg, Path: paths[key]})
	}
	if len(ds) == 0 {
		ds = Errorf(nil, err.Error())
	}
	return ds
}

// best picks the most telling of the messages about one attribute.
func best(msgs []string) string {
	for _, weak := range []func(string) bool{
		func(m string) bool { return strings.Contains(m, "empty disjunction") },
		func(m string) bool { return strings.HasPrefix(m, "conflicting values") },
	} {
		var kept []string
		for _, m := range msgs {
			if !weak(m) {
				kept = append(kept, m)
			}
		}
		if len(kept) > 0 {
			msgs = kept
		}
	}
	return msgs[0]
}

// DecodeConfig checks a config block against the plugin's CUE schema, as
// CheckConfig does, and decodes it, with the schema's defaults, into v: a
// pointer to a struct whose json tags name the attributes. A plugin calls
// it from Configure and returns its diagnostics:
//
//	var cfg struct {
//		URL     string  `json:"url"`
//		Timeout float64 `json:"timeout_seconds"`
//	}
//	if ds := sdk.DecodeConfig(schema, req.ConfigJSON, &cfg); ds.HasErrors() {
//		return sdk.ConfigureResponse{Diagnostics: ds}
//	}
func DecodeConfig(schema string, configJSON []byte, v any) Diagnostics {
	data, ds := CheckConfig(schema, configJSON)
	if ds.HasErrors() {
		return ds
	}
	if err := json.Unmarshal(data, v); err != nil {
		return Errorf(nil, "the config block does not fit the plugin's settings: "+err.Error())
	}
	return nil
}
