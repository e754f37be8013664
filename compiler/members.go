package compiler

import (
	"strconv"
	"strings"

	"poolc.dev/poolc/compiler/numlit"
	"poolc.dev/poolc/compiler/podspec"
	"poolc.dev/poolc/compiler/tree"
	"poolc.dev/poolc/pools"
)

// compactMembers rewrites each pod pool's compact members list into the
// member blocks it stands for, before the schema check:
//
//	members = "ctx@host:3#k3d-reg:5000"
//
// becomes member "ctx" { ssh_host = "host", capacity = 3, registry =
// "k3d-reg:5000" }, each value placed where it is written inside the
// string. The two forms are then checked by the same schema rules and give
// the same messages. A members value that is not a string or a list of
// strings is left for the schema check to report.
func compactMembers(doc *tree.Value) pools.Diagnostics {
	var diags pools.Diagnostics
	poolsObj := doc.Get("pool")
	if poolsObj == nil || poolsObj.Kind != tree.Object {
		return nil
	}
	for _, p := range poolsObj.Fields {
		pps := p.Value.Get("pod_pool")
		if p.Value.Kind != tree.Object || pps == nil || pps.Kind != tree.Object {
			continue
		}
		for _, pp := range pps.Fields {
			if pp.Value.Kind == tree.Object {
				expandMembers(pp.Key, pp.Value, &diags)
			}
		}
	}
	return diags
}

// expandMembers replaces the members field of the pod pool named pool,
// if it has one.
func expandMembers(pool string, pp *tree.Value, diags *pools.Diagnostics) {
	at := -1
	for i, f := range pp.Fields {
		if f.Key == "members" {
			at = i
		}
	}
	if at < 0 {
		return
	}
	field := pp.Fields[at]
	items := []*tree.Value{field.Value}
	if field.Value.Kind == tree.List {
		items = field.Value.Items
	}
	for _, item := range items {
		if item.Kind != tree.String {
			return // the schema check reports it
		}
	}
	pp.Fields = append(pp.Fields[:at:at], pp.Fields[at+1:]...)
	if pp.Get("member") != nil {
		diags.ErrorAt("members-twice", field.KeyPos, "pod_pool %q: use either members or member blocks, not both", pool)
		return
	}
	blocks := &tree.Value{Kind: tree.Object, Pos: field.Value.Pos}
	if len(items) == 0 {
		diags.ErrorAt("bad-member", field.Value.Pos, "pod_pool %q: member list is empty: want %s", pool, podspec.Syntax)
		blocks.Kind = tree.Invalid
	}
	for _, item := range items {
		if field.Value.Kind == tree.List && strings.Contains(item.Str, ",") {
			// One form or the other: a list holds one member per item.
			diags.ErrorAt("bad-member", item.Pos, "pod_pool %q: %q holds %d members, but a list of members holds one per item: write [%s], or the whole list as one comma-separated string",
				pool, item.Str, len(strings.Split(item.Str, ",")), quotedItems(item.Str))
			continue
		}
		entries, errs := podspec.Split(item.Str)
		for _, e := range errs {
			diags.ErrorAt("bad-member", stringPos(item.Pos, e.Offset), "pod_pool %q: %s", pool, e.Msg)
		}
		for _, e := range entries {
			ctxPos := stringPos(item.Pos, e.Context.Offset)
			m := &tree.Value{Kind: tree.Object, Pos: ctxPos}
			add := func(key string, part podspec.Part, v *tree.Value) {
				if part.Set {
					v.Pos = stringPos(item.Pos, part.Offset)
					m.Fields = append(m.Fields, &tree.Field{Key: key, KeyPos: v.Pos, Value: v})
				}
			}
			add("ssh_host", e.SSHHost, &tree.Value{Kind: tree.String, Str: e.SSHHost.Text})
			add("capacity", e.Capacity, capacity(e.Capacity.Text, stringPos(item.Pos, e.Capacity.Offset), diags))
			add("registry", e.Registry, &tree.Value{Kind: tree.String, Str: e.Registry.Text})
			blocks.Fields = append(blocks.Fields, &tree.Field{Key: e.Context.Text, KeyPos: ctxPos, Value: m})
		}
	}
	pp.Fields = append(pp.Fields, &tree.Field{Key: "member", KeyPos: field.KeyPos, Value: blocks})
}

// capacity reads the capacity part of a compact member as the number it
// spells, under the rules of number literals, or keeps it as a string the
// schema check refuses as not a number.
func capacity(text string, at pools.Pos, diags *pools.Diagnostics) *tree.Value {
	digits := strings.TrimPrefix(text, "-")
	if digits == "" || !strings.ContainsAny(digits[:1], "0123456789.") {
		return &tree.Value{Kind: tree.String, Str: text}
	}
	if err := numlit.Check(digits); err != nil {
		diags.ErrorAt("syntax", at, "%v", err)
		return &tree.Value{Kind: tree.Invalid}
	}
	n, err := strconv.ParseFloat(text, 64)
	if err != nil {
		diags.ErrorAt("syntax", at, "capacity %s is out of range", text)
		return &tree.Value{Kind: tree.Invalid}
	}
	return &tree.Value{Kind: tree.Number, Num: n}
}
