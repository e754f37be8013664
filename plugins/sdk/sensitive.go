package sdk

import (
	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// SensitiveAttr is the CUE attribute that marks a field of a plugin's
// ConfigSchema as sensitive: poolc redacts its value from every text that
// comes back from the plugin (diagnostics, progress, output lines, the
// journal) and from its own messages about the config block.
//
//	token?:   string @poolc(sensitive)
//	headers?: {[string]: string} @poolc(sensitive)   // every value inside
const SensitiveAttr = "poolc"

// AnyElement in a path returned by SensitivePaths stands for every element
// of a list or every field of a struct at that place.
const AnyElement = "*"

// SensitivePaths lists the attribute paths of a config schema's fields
// marked @poolc(sensitive), at every level: in nested structs, and in the
// elements of lists (written AnyElement). A marked field's whole value is
// sensitive, every string and number inside it. A schema that does not
// compile has none (CheckConfig reports it).
func SensitivePaths(schema string) [][]string {
	sch := cuecontext.New().CompileString("{\n" + schema + "\n}")
	if sch.Err() != nil {
		return nil
	}
	var out [][]string
	sensitivePaths(sch, nil, &out, 0)
	return out
}

// maxSchemaDepth bounds the walk of a schema that refers to itself.
const maxSchemaDepth = 32

func sensitivePaths(v cue.Value, at []string, out *[][]string, depth int) {
	if depth > maxSchemaDepth {
		return
	}
	switch v.IncompleteKind() {
	case cue.StructKind:
		it, err := v.Fields(cue.Optional(true))
		if err != nil {
			return
		}
		for it.Next() {
			if !it.Selector().IsString() {
				continue
			}
			path := append(append([]string(nil), at...), it.Selector().Unquoted())
			attr := it.Value().Attribute(SensitiveAttr)
			if ok, _ := attr.Flag(0, "sensitive"); ok {
				*out = append(*out, path)
				continue
			}
			sensitivePaths(it.Value(), path, out, depth+1)
		}
	case cue.ListKind:
		if elem := v.LookupPath(cue.MakePath(cue.AnyIndex)); elem.Exists() {
			sensitivePaths(elem, append(append([]string(nil), at...), AnyElement), out, depth+1)
		}
	}
}
