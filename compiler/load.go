// Package compiler turns pool files into a validated pool: it reads CUE or
// HCL, checks the result against the embedded schema, decodes it into the
// IR and runs the validation rules, reporting every finding with its
// file:line:col.
package compiler

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"unicode/utf8"

	"poolc.dev/poolc/compiler/cuefront"
	"poolc.dev/poolc/compiler/hclfront"
	"poolc.dev/poolc/compiler/schemacheck"
	"poolc.dev/poolc/compiler/tree"
	"poolc.dev/poolc/compiler/validate"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/schema"
)

// Language is the language a configuration is written in.
type Language string

// The pool languages.
const (
	// CUE is a pool written in CUE (pool.cue).
	CUE Language = "cue"
	// HCL is a pool written in HCL (pool.hcl).
	HCL Language = "hcl"
)

// MaxPoolSize is the most bytes poolc reads for one pool, all its files
// together. A generated pool of 1,000 nodes and 10,000 lanes takes about
// 2 MB; a larger pool is almost certainly not a pool.
const MaxPoolSize = 16 << 20

// MaxPoolSizeEnv names the environment variable that raises MaxPoolSize
// for one run, for a pool larger than any written by hand (a generated
// pool of 100,000 lanes takes about 19 MiB): a whole number of MiB from
// 16 to MaxPoolSizeCeiling. The bound on each HCL file's tokens stays, so
// such a pool is written as several files (poolgen --files).
const MaxPoolSizeEnv = "POOLC_MAX_POOL_MIB"

// MaxPoolSizeCeiling is the most MaxPoolSizeEnv may allow.
const MaxPoolSizeCeiling = 256 << 20

// poolSizeLimit is the most bytes Read reads for one pool: MaxPoolSize,
// or what MaxPoolSizeEnv says.
func poolSizeLimit() (int64, *pools.Diagnostic) {
	v := os.Getenv(MaxPoolSizeEnv)
	if v == "" {
		return MaxPoolSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < MaxPoolSize>>20 || n > MaxPoolSizeCeiling>>20 {
		return 0, &pools.Diagnostic{Code: "read", Message: fmt.Sprintf("%s=%q: want a whole number of MiB from %d to %d",
			MaxPoolSizeEnv, v, MaxPoolSize>>20, MaxPoolSizeCeiling>>20)}
	}
	return int64(n) << 20, nil
}

// Config is a loaded pool: the IR, where each attribute was written, the
// files it came from and a hash of their contents.
type Config struct {
	Pool     *pools.Pool
	Sources  pools.SourceMap
	Language Language
	Files    []string
	// Hash is the sha256 of the files' base names and contents, in hex; a
	// saved plan records it so a plan for other files is refused. Base
	// names keep it the same from any working directory.
	Hash string
}

// File is one pool file, read.
type File struct {
	Name string
	Src  []byte
}

// Load reads the pool described by paths (files or directories; a
// directory contributes its .cue and .hcl files, not its subdirectories),
// validates it, and returns it with every finding, sorted. The Config is
// nil only when the files could not be read; its Pool is nil when they do
// not make a pool, and set (perhaps invalid) otherwise.
func Load(paths []string) (*Config, pools.Diagnostics) {
	return LoadWith(paths, DefaultOptions())
}

// LoadWith is Load with the choice of how models' memory is decided.
func LoadWith(paths []string, opt Options) (*Config, pools.Diagnostics) {
	files, diags := Read(paths)
	if diags.HasErrors() {
		diags.Sort()
		return nil, diags
	}
	cfg, more := CompileWith(files, opt)
	diags = append(diags, more...)
	diags.Sort()
	return cfg, diags
}

// Read finds and reads the pool files named by paths, refusing what cannot
// be a pool file: an unknown extension, a binary or oversized file, and a
// mix of CUE and HCL.
func Read(paths []string) ([]File, pools.Diagnostics) {
	names, diags := Discover(paths)
	if diags.HasErrors() {
		return nil, diags
	}
	if d := mixed(names); d != nil {
		return nil, pools.Diagnostics{*d}
	}
	limit, d := poolSizeLimit()
	if d != nil {
		return nil, pools.Diagnostics{*d}
	}
	var files []File
	left := limit
	for _, name := range names {
		f, d := readFile(name, left, limit)
		if d != nil {
			diags = append(diags, *d)
			if d.Code == "too-large" {
				break
			}
			continue
		}
		left -= int64(len(f.Src))
		files = append(files, f)
	}
	return files, diags
}

// Discover lists the pool files named by paths: each file as given (it
// must end in .cue or .hcl) and the .cue and .hcl files of each directory,
// not of its subdirectories. No paths means the current directory.
func Discover(paths []string) ([]string, pools.Diagnostics) {
	var diags pools.Diagnostics
	var names []string
	if len(paths) == 0 {
		paths = []string{"."}
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			diags.ErrorAt("read", pools.Pos{File: p}, "%s", cleanErr(err))
			continue
		}
		if !st.IsDir() {
			if LanguageOf(p) == "" {
				diags.ErrorAt("read", pools.Pos{File: p}, "not a pool file: want a .cue or .hcl file")
				continue
			}
			names = append(names, p)
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			diags.ErrorAt("read", pools.Pos{File: p}, "%s", cleanErr(err))
			continue
		}
		found := 0
		for _, e := range ents {
			if !e.IsDir() && LanguageOf(e.Name()) != "" {
				names = append(names, filepath.Join(p, e.Name()))
				found++
			}
		}
		if found == 0 {
			diags.ErrorAt("read", pools.Pos{File: p}, "directory holds no .cue or .hcl files")
		}
	}
	return names, diags
}

func cleanErr(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// LanguageOf tells a pool file's language by its extension, or "".
func LanguageOf(name string) Language {
	switch filepath.Ext(name) {
	case ".cue":
		return CUE
	case ".hcl":
		return HCL
	}
	return ""
}

func mixed(names []string) *pools.Diagnostic {
	var firstCUE, firstHCL string
	for _, n := range names {
		switch LanguageOf(n) {
		case CUE:
			if firstCUE == "" {
				firstCUE = n
			}
		case HCL:
			if firstHCL == "" {
				firstHCL = n
			}
		}
	}
	if firstCUE == "" || firstHCL == "" {
		return nil
	}
	return &pools.Diagnostic{Code: "mixed-languages", Pos: pools.Pos{File: firstHCL},
		Message: fmt.Sprintf("mixes HCL and CUE (%s): one pool is written in one language", firstCUE)}
}

// ReadFile reads one pool file, refusing what is not a regular file (a
// directory, FIFO or device, which is never opened), a file larger than
// MaxPoolSize and a file that is not text.
func ReadFile(name string) (File, *pools.Diagnostic) {
	return readFile(name, MaxPoolSize, MaxPoolSize)
}

// readFile is ReadFile with left bytes of the pool's size still allowed,
// of limit in all.
func readFile(name string, left, limit int64) (File, *pools.Diagnostic) {
	bad := func(code, format string, args ...any) (File, *pools.Diagnostic) {
		return File{}, &pools.Diagnostic{Code: code, Pos: pools.Pos{File: name}, Message: fmt.Sprintf(format, args...)}
	}
	tooLarge := func() (File, *pools.Diagnostic) {
		return bad("too-large", "with this file the pool passes %s; poolc reads at most that much for one pool, all its files together (%s raises it)", mib(limit), MaxPoolSizeEnv)
	}
	st, err := os.Stat(name)
	if err != nil {
		return bad("read", "%s", cleanErr(err))
	}
	if !st.Mode().IsRegular() {
		return bad("read", "not a regular file (%s): poolc reads pool files only from regular files", kindOf(st.Mode()))
	}
	if st.Size() > limit {
		return bad("too-large", "file is %s; poolc reads pool files of at most %s (%s raises it)", mib(st.Size()), mib(limit), MaxPoolSizeEnv)
	}
	if st.Size() > left {
		return tooLarge()
	}
	f, err := os.Open(name)
	if err != nil {
		return bad("read", "%s", cleanErr(err))
	}
	defer f.Close()
	// The file may have been replaced since the Stat: check what was opened,
	// and read no more than is allowed whatever its size says.
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		return bad("read", "not a regular file: poolc reads pool files only from regular files")
	}
	src, err := io.ReadAll(io.LimitReader(f, left+1))
	if err != nil {
		return bad("read", "%s", cleanErr(err))
	}
	if int64(len(src)) > left {
		return tooLarge()
	}
	if i := bytes.IndexByte(src, 0); i >= 0 {
		return bad("read", "not a text file: byte %d is NUL", i)
	}
	if !utf8.Valid(src) {
		return bad("read", "not a text file: it is not valid UTF-8")
	}
	return File{Name: name, Src: src}, nil
}

func mib(n int64) string { return pools.Num(float64(n)/(1<<20)) + " MiB" }

// kindOf names a file mode that is not a regular file.
func kindOf(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}

// Format returns a pool file in its language's canonical layout, or the
// syntax errors that prevent formatting it.
func Format(f File) ([]byte, pools.Diagnostics) {
	if LanguageOf(f.Name) == CUE {
		return cuefront.Format(f.Name, f.Src)
	}
	return hclfront.Format(f.Name, f.Src)
}

// CompileWith compiles pool files already read (all in one language) into
// a validated pool: Load without the file system. opt chooses how models'
// memory is decided: with an Estimator it reads the models' GGUF headers;
// without one it makes no memory estimates, so every model must declare
// memory_gb.
func CompileWith(files []File, opt Options) (*Config, pools.Diagnostics) {
	if len(files) == 0 {
		return nil, pools.Diagnostics{{Code: "read", Message: "no pool files given"}}
	}
	lang := LanguageOf(files[0].Name)
	cfg := &Config{Language: lang, Hash: hash(files)}
	for _, f := range files {
		cfg.Files = append(cfg.Files, f.Name)
	}
	if allBlank(files) {
		return cfg, pools.Diagnostics{{Code: "empty", Pos: pools.Pos{File: files[0].Name, Line: 1, Col: 1},
			Message: "file is empty: " + example(lang)}}
	}
	doc, diags := parse(lang, files)
	if doc == nil {
		return cfg, diags
	}
	diags = append(diags, compactMembers(doc)...)
	diags = append(diags, schemacheck.Check(doc)...)
	if diags.HasErrors() {
		return cfg, diags
	}
	p, sm, more := decode(doc)
	diags = append(diags, more...)
	if p == nil {
		return cfg, diags
	}
	cfg.Pool, cfg.Sources = p, sm
	diags = append(diags, resolveMemory(p, opt)...)
	diags = append(diags, validate.Pool(p)...)
	sm.Attach(diags)
	return cfg, diags
}

func parse(lang Language, files []File) (*tree.Value, pools.Diagnostics) {
	first := pools.Pos{File: files[0].Name, Line: 1, Col: 1}
	if lang == CUE {
		srcs := make([]cuefront.Source, len(files))
		for i, f := range files {
			srcs[i] = cuefront.Source{Name: f.Name, Src: f.Src}
		}
		doc, diags := cuefront.Parse(srcs)
		if doc != nil && doc.Pos.IsZero() {
			doc.Pos = first
		}
		return doc, diags
	}
	var docs []*tree.Value
	var diags pools.Diagnostics
	for _, f := range files {
		doc, d := hclfront.Parse(f.Name, f.Src)
		diags = append(diags, d...)
		if doc != nil {
			docs = append(docs, doc)
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	doc := mergeFiles(docs, &diags)
	doc.Pos = first
	return doc, diags
}

func example(lang Language) string {
	if lang == CUE {
		return `a pool file declares pool: "NAME": { ... }`
	}
	return `a pool file declares pool "NAME" { ... }`
}

func allBlank(files []File) bool {
	for _, f := range files {
		if len(bytes.TrimSpace(f.Src)) > 0 {
			return false
		}
	}
	return true
}

func hash(files []File) string {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool {
		bi, bj := filepath.Base(sorted[i].Name), filepath.Base(sorted[j].Name)
		if bi != bj {
			return bi < bj
		}
		return string(sorted[i].Src) < string(sorted[j].Src)
	})
	h := sha256.New()
	for _, f := range sorted {
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.Base(f.Name), len(f.Src))
		h.Write(f.Src)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// mergeFiles joins the trees of several HCL files into one: pool blocks
// of the same name merge, their named blocks (node, lane, ...) gather, and
// anything set in two files is reported.
func mergeFiles(docs []*tree.Value, diags *pools.Diagnostics) *tree.Value {
	root := &tree.Value{Kind: tree.Object}
	seen := entryIndex{}
	for _, doc := range docs {
		for _, f := range doc.Fields {
			into := root.Get(f.Key)
			switch {
			case into == nil:
				root.Fields = append(root.Fields, f)
			case f.Key == "pool" && into.Kind == tree.Object && f.Value.Kind == tree.Object:
				for _, p := range f.Value.Fields {
					if have := into.Get(p.Key); have != nil && have.Kind == tree.Object && p.Value.Kind == tree.Object {
						mergePoolBody(have, p.Value, seen, diags)
					} else {
						into.Fields = append(into.Fields, p)
					}
				}
			default:
				diags.ErrorAt("duplicate", f.KeyPos, "%s is set twice; first at %s", f.Key, fieldPos(root, f.Key))
			}
		}
	}
	return root
}

// entryIndex indexes the entries of the named fields merged so far (a pool's
// lane map, say) by key, so that merging n entries costs n lookups rather
// than n scans of the entries before them.
type entryIndex map[*tree.Value]map[string]pools.Pos

// of is the index of the entries of obj, built on first use.
func (es entryIndex) of(obj *tree.Value) map[string]pools.Pos {
	idx, ok := es[obj]
	if !ok {
		idx = make(map[string]pools.Pos, len(obj.Fields))
		for _, f := range obj.Fields {
			idx[f.Key] = f.KeyPos
		}
		es[obj] = idx
	}
	return idx
}

// mergePoolBody adds the body of one file's pool block to another's.
func mergePoolBody(into, from *tree.Value, seen entryIndex, diags *pools.Diagnostics) {
	for _, f := range from.Fields {
		have := into.Get(f.Key)
		switch {
		case have == nil:
			into.Fields = append(into.Fields, f)
		case named(f.Key) && have.Kind == tree.Object && f.Value.Kind == tree.Object:
			idx := seen.of(have)
			for _, e := range f.Value.Fields {
				if first, dup := idx[e.Key]; dup {
					diags.ErrorAt("duplicate", e.KeyPos, "%s %q is declared twice; first at %s", f.Key, e.Key, first)
					continue
				}
				idx[e.Key] = e.KeyPos
				have.Fields = append(have.Fields, e)
			}
		default:
			diags.ErrorAt("duplicate", f.KeyPos, "%s is set twice; first at %s", f.Key, fieldPos(into, f.Key))
		}
	}
}

// named reports whether a pool field holds entries keyed by name.
func named(key string) bool {
	f := schema.Root().Field("pool").Spec.Elem.Field(key)
	return f != nil && f.Spec.Kinds&schema.KindMap != 0
}

func fieldPos(obj *tree.Value, key string) pools.Pos {
	for _, f := range obj.Fields {
		if f.Key == key {
			return f.KeyPos
		}
	}
	return pools.Pos{}
}

// Document reads one file of another kind than a pool (a scenario file)
// whose top level is root: it parses the file in its language, checks it
// against root and fills in root's defaults. The tree is nil when the
// file cannot be parsed or checked.
func Document(f File, root *schema.Spec) (*tree.Value, pools.Diagnostics) {
	var doc *tree.Value
	var diags pools.Diagnostics
	switch LanguageOf(f.Name) {
	case CUE:
		doc, diags = cuefront.Parse([]cuefront.Source{{Name: f.Name, Src: f.Src}})
	case HCL:
		doc, diags = hclfront.ParseAs(f.Name, f.Src, root)
	default:
		diags.ErrorAt("read", pools.Pos{File: f.Name}, "not a .cue or .hcl file")
	}
	if doc == nil || diags.HasErrors() {
		return nil, diags
	}
	if doc.Pos.IsZero() {
		doc.Pos = pools.Pos{File: f.Name, Line: 1, Col: 1}
	}
	diags = append(diags, schemacheck.CheckAgainst(doc, root)...)
	if diags.HasErrors() {
		return nil, diags
	}
	return doc, diags
}

// Positions finds where each attribute of a document was written, by its
// path from the top level (its first entry's key excluded, as for a pool:
// scenario "x" { demand "chat" {...} } gives demand.chat).
func Positions(doc *tree.Value) pools.SourceMap {
	var sm pools.SourceMap
	for _, top := range doc.Fields {
		if top.Value.Kind != tree.Object {
			continue
		}
		for _, entry := range top.Value.Fields {
			sm.Add(positions{entry.Value})
		}
	}
	return sm
}
