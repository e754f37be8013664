package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/plugins/convert"
	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/plugins/sdk/sdktest"
	"poolc.dev/poolc/pools"
)

// The tests in this file keep docs/PLUGINS.md, the guide for plugin
// authors in any language, true to the protocol and the SDK: every
// message, field and enum value of actuator.proto, every RPC, every part
// a plugin may observe, every step kind and every JSON field of the SDK's
// types must be written there; its Go snippets must be copied from the
// webhook example as it is; its JSON steps must be the SDK's JSON; and its
// example pool must load and route as the text says.

const (
	docPath   = "../../docs/PLUGINS.md"
	protoPath = "../proto/actuator.proto"
	repoRoot  = "../../"
)

func readDoc(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var (
	protoMessage = regexp.MustCompile(`(?m)^(message|enum|service)\s+(\w+)\s*\{`)
	protoRPC     = regexp.MustCompile(`(?m)^\s*rpc\s+(\w+)\(`)
	protoField   = regexp.MustCompile(`(?m)^\s*((?:repeated\s+)?(?:map<[^>]+>|[\w.]+))\s+(\w+)\s*=\s*(\d+);`)
	protoValue   = regexp.MustCompile(`(?m)^\s*([A-Z][A-Z0-9_]*)\s*=\s*(\d+);`)
)

// TestDocNamesEveryProtoElement checks that every message, enum, service
// and RPC of the proto is named in the guide, and every field is written
// as the proto declares it ("repeated Diagnostic diagnostics = 6"), so a
// field added to the proto without a word in the guide fails here.
func TestDocNamesEveryProtoElement(t *testing.T) {
	doc, proto := readDoc(t, docPath), readDoc(t, protoPath)
	if !strings.Contains(proto, "package poolc.actuator.v"+strconv.Itoa(sdk.ProtocolVersion)+";") {
		t.Fatalf("actuator.proto's package is not poolc.actuator.v%d", sdk.ProtocolVersion)
	}
	for _, want := range []string{
		"`poolc.actuator.v" + strconv.Itoa(sdk.ProtocolVersion) + "`",
		"protocol version **" + strconv.Itoa(sdk.ProtocolVersion) + "**",
		"`" + sdk.MagicCookieKey + "`",
		"`" + sdk.MagicCookieValue + "`",
		"`" + sdk.ReattachEnv + "`",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/PLUGINS.md does not mention %s", want)
		}
	}
	var n int
	for _, m := range protoMessage.FindAllStringSubmatch(proto, -1) {
		n++
		if !strings.Contains(doc, "`"+m[2]+"`") && !strings.Contains(doc, "**`"+m[2]+"`**") {
			t.Errorf("docs/PLUGINS.md does not name %s %s", m[1], m[2])
		}
	}
	for _, m := range protoRPC.FindAllStringSubmatch(proto, -1) {
		n++
		if !strings.Contains(doc, "rpc "+m[1]+"(") {
			t.Errorf("docs/PLUGINS.md does not show rpc %s", m[1])
		}
	}
	for _, m := range protoField.FindAllStringSubmatch(proto, -1) {
		n++
		decl := m[1] + " " + m[2] + " = " + m[3]
		if !strings.Contains(doc, decl) {
			t.Errorf("docs/PLUGINS.md does not describe the field %q", decl)
		}
	}
	for _, m := range protoValue.FindAllStringSubmatch(proto, -1) {
		n++
		if decl := m[1] + " = " + m[2]; !strings.Contains(doc, decl) {
			t.Errorf("docs/PLUGINS.md does not describe the enum value %q", decl)
		}
	}
	if n < 100 {
		t.Fatalf("found only %d elements in actuator.proto; is the parsing here still right?", n)
	}
}

// TestDocNamesEveryObservedPartAndKind checks the sdk.Observe* constants
// (by name and value) and every step kind.
func TestDocNamesEveryObservedPartAndKind(t *testing.T) {
	doc := readDoc(t, docPath)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "sdk.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var parts int
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Observe") {
					continue
				}
				parts++
				value, _ := strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
				if row := "| `" + value + "` | `sdk." + name.Name + "` |"; !strings.Contains(doc, row) {
					t.Errorf("docs/PLUGINS.md has no row %q for %s", row, name.Name)
				}
			}
		}
	}
	if parts != 6 {
		t.Errorf("found %d Observe* constants in sdk.go, want 6; update this test and the guide", parts)
	}
	for _, k := range sdk.AllStepKinds() {
		if !strings.Contains(doc, "| `"+string(k)+"` |") {
			t.Errorf("docs/PLUGINS.md's table of step kinds has no row for %q", k)
		}
	}
}

// TestDocListsEveryJSONField checks the table of the SDK types' JSON
// fields against their json tags: each type's row lists exactly its
// fields, in order.
func TestDocListsEveryJSONField(t *testing.T) {
	doc := readDoc(t, docPath)
	for _, v := range []any{sdk.Step{}, sdk.Node{}, sdk.Model{}, sdk.Lane{}, sdk.LaneSpec{}, sdk.AliasSpec{}, sdk.LaneEndpoint{},
		sdk.RouteChange{}, sdk.Route{}, sdk.Prefetch{}, sdk.Prefetched{}, sdk.Member{}, sdk.ImageSync{}, sdk.NodeStatus{},
		sdk.Fleet{}, sdk.MemberImage{}, sdk.Unobserved{}, sdk.Inventory{}} {
		typ := reflect.TypeOf(v)
		var want []string
		for i := range typ.NumField() {
			tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			want = append(want, tag)
		}
		prefix := "| `" + typ.Name() + "` | "
		i := strings.Index(doc, prefix)
		if i < 0 {
			t.Errorf("docs/PLUGINS.md has no row for %s in its table of JSON fields", typ.Name())
			continue
		}
		row, _, _ := strings.Cut(doc[i+len(prefix):], "\n")
		var got []string
		for _, field := range strings.Split(strings.TrimSuffix(strings.TrimSpace(row), "|"), ",") {
			name, _, _ := strings.Cut(strings.TrimSpace(field), " ")
			got = append(got, strings.Trim(name, "`"))
		}
		if !slices.Equal(got, want) {
			t.Errorf("docs/PLUGINS.md lists the JSON fields of %s as %q, want %q", typ.Name(), got, want)
		}
	}
}

// block is a fenced code block and the HTML comment just before it.
type block struct {
	note, lang, body string
}

var fence = regexp.MustCompile("(?s)(?:<!-- ([^>]*) -->\n)?```(\\w*)\n(.*?)```")

func blocks(text string) []block {
	var out []block
	for _, m := range fence.FindAllStringSubmatch(text, -1) {
		out = append(out, block{note: m[1], lang: m[2], body: m[3]})
	}
	return out
}

// TestDocSnippetsAreFromTheWebhook checks that each Go snippet marked
// "verbatim: PATH" is a part of that file as it is.
func TestDocSnippetsAreFromTheWebhook(t *testing.T) {
	var n int
	for _, b := range blocks(readDoc(t, docPath)) {
		path, ok := strings.CutPrefix(b.note, "verbatim: ")
		if !ok {
			continue
		}
		n++
		if src := readDoc(t, repoRoot+path); !strings.Contains(src, b.body) {
			t.Errorf("docs/PLUGINS.md quotes %s, which no longer has:\n%s", path, b.body)
		}
	}
	if n < 5 {
		t.Errorf("docs/PLUGINS.md has %d verbatim snippets, want at least 5", n)
	}
}

// TestDocStepsAreSDKJSON checks that every JSON step shown in the guide
// and in the webhook's README is a step in the SDK's JSON form: it
// decodes without unknown fields and is written back byte for byte.
func TestDocStepsAreSDKJSON(t *testing.T) {
	var n int
	for _, path := range []string{docPath, repoRoot + "examples/plugins/webhook/README.md"} {
		for _, b := range blocks(readDoc(t, path)) {
			if b.lang != "json" || !strings.HasPrefix(b.body, "{\n  \"id\":") {
				continue
			}
			n++
			dec := json.NewDecoder(strings.NewReader(b.body))
			dec.DisallowUnknownFields()
			var step sdk.Step
			if err := dec.Decode(&step); err != nil {
				t.Errorf("%s: a JSON step is not an sdk.Step: %v\n%s", path, err, b.body)
				continue
			}
			again, _ := json.MarshalIndent(step, "", "  ")
			if !bytes.Equal(append(again, '\n'), []byte(b.body)) {
				t.Errorf("%s: a JSON step is not as the SDK writes it:\n%s\nthe SDK writes:\n%s", path, b.body, again)
			}
		}
	}
	if n < 3 {
		t.Errorf("found %d JSON steps in the guide and the webhook's README, want at least 3", n)
	}
}

// TestDocExamplePool loads the guide's example pool and checks what the
// text says of it: node a runs on plugin llama, every other target on the
// built-in sim.
func TestDocExamplePool(t *testing.T) {
	var src string
	for _, b := range blocks(readDoc(t, docPath)) {
		if strings.HasPrefix(b.note, "example pool") {
			src = b.body
		}
	}
	if src == "" {
		t.Fatal("docs/PLUGINS.md has no block marked <!-- example pool ... -->")
	}
	cfg, ds := compiler.CompileWith([]compiler.File{{Name: "PLUGINS.md.hcl", Src: []byte(src)}}, compiler.Options{})
	if ds.HasErrors() || cfg == nil || cfg.Pool == nil {
		t.Fatalf("the example pool does not load: %v", ds)
	}
	var got []string
	for _, tg := range cfg.Pool.Targets() {
		got = append(got, fmt.Sprintf("%s: %s", tg.What, tg.Plugin))
	}
	want := []string{`node "a": llama`, `node "b": ` + pools.DefaultPlugin, `gateway: ` + pools.DefaultPlugin,
		`pod_pool "harness" cluster: ` + pools.DefaultPlugin, `pod_pool "harness" image_sync: ` + pools.DefaultPlugin}
	if !slices.Equal(got, want) {
		t.Errorf("the example pool's targets are %q, want %q", got, want)
	}
	llama, sim := convert.Inventory(cfg.Pool, "llama", nil), convert.Inventory(cfg.Pool, pools.DefaultPlugin, nil)
	if len(llama.Nodes) != 1 || llama.Nodes[0].Name != "a" || len(llama.Lanes) != 1 || len(llama.Models) != 1 || llama.Gateway || len(llama.Members) != 0 {
		t.Errorf("llama's inventory is %+v; the guide says node a, lane chat, model qwen3-27b", llama)
	}
	if len(sim.Nodes) != 1 || sim.Nodes[0].Name != "b" || len(sim.Lanes) != 1 || !sim.Gateway || len(sim.Aliases) != 1 || len(sim.Members) != 1 || len(sim.GatewayNodes) != 2 {
		t.Errorf("sim's inventory is %+v; the guide says node b, lane chat, the gateway with alias chat and both nodes, the member of harness", sim)
	}
}

// TestDocWireProtocol builds testdata/wireplugin, a plugin written from
// the guide's description of the wire protocol without go-plugin or the
// SDK (its own handshake line, certificate, mutual TLS, health service and
// Actuator service on TCP), and checks that poolc's side accepts it: the
// conformance checks pass against the binary, and plugins/host starts it,
// configures it and routes the gateway to it.
func TestDocWireProtocol(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "poolc-plugin-wire")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/wireplugin")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/wireplugin: %v\n%s", err, out)
	}
	t.Run("Conformance", func(t *testing.T) { sdktest.ConformanceBinary(t, bin) })

	pool := &pools.Pool{Name: "wire", Gateway: "wire", Plugins: []pools.Plugin{{Name: "wire", Path: bin}}}
	set, ds := host.Start(context.Background(), pool, host.Options{WorkDir: t.TempDir()})
	if set == nil || ds.HasErrors() {
		t.Fatalf("host.Start: %v", ds)
	}
	defer set.Close()
	var wire host.Info
	for _, info := range set.Plugins() {
		if info.Name == "wire" {
			wire = info
		}
	}
	if wire.Version != "0.0.1" || !slices.Equal(wire.Targets, []string{"gateway"}) || !slices.Equal(wire.Capabilities.Observes, []string{sdk.ObserveRoutes}) {
		t.Errorf("the wire plugin runs as %+v; want version 0.0.1 serving the gateway and observing routes", wire)
	}
	if _, ods := set.Observe(context.Background()); ods.HasErrors() {
		t.Errorf("Observe: %v", ods)
	}
}

// TestDocSensitiveExample checks the guide's sensitive-field example: the
// schema compiles as a config schema and its marked paths are the ones the
// text lists.
func TestDocSensitiveExample(t *testing.T) {
	doc := readDoc(t, docPath)
	_, section, ok := strings.Cut(doc, "### Sensitive fields\n")
	if !ok {
		t.Fatal("docs/PLUGINS.md has no section \"Sensitive fields\"")
	}
	block := regexp.MustCompile("(?s)```cue\n(.*?)```").FindStringSubmatch(section)
	if block == nil {
		t.Fatal("the section has no cue block")
	}
	if _, ds := sdk.CheckConfig(block[1], []byte(`{"url": "https://h"}`)); ds.HasErrors() {
		t.Fatalf("the example schema does not check a block: %v", ds)
	}
	var listed []string
	for _, p := range sdk.SensitivePaths(block[1]) {
		listed = append(listed, "`"+strings.Join(p, ".")+"`")
	}
	want := strings.Join(listed[:len(listed)-1], ", ") + " and " + listed[len(listed)-1]
	if !strings.Contains(strings.Join(strings.Fields(section), " "), "The marked paths of this schema are "+want+" ") {
		t.Errorf("the section should say: The marked paths of this schema are %s", want)
	}
	if !strings.Contains(section, "`@"+sdk.SensitiveAttr+"(sensitive)`") {
		t.Errorf("the section does not name the attribute @%s(sensitive)", sdk.SensitiveAttr)
	}
}
