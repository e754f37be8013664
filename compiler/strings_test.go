package compiler

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"poolc.dev/poolc/pools"
)

// stringsPool is a complete, valid pool with every string field that can
// reach a remote command, a Kubernetes object or a file path; a test
// replaces one value. Values are source text: quoted strings or numbers.
type stringsPool struct {
	gateway, node, address, kube, user, sshPort, runtime string
	path, source, sha, arg, lane, port                   string
	podPool, image, namespace, cluster, imageSync        string
	context, host, capacity, registry                    string
	compact                                              bool // members as one compact string
}

func validStrings() stringsPool {
	return stringsPool{
		gateway: `"sim"`, node: `"n"`, address: `"n.lan"`, kube: `"k3d-lab"`, user: `"ops"`, sshPort: `22`, runtime: `"sim"`,
		path: `"/models/m.gguf"`, source: `"https://weights.example/m.gguf"`, sha: `"` + strings.Repeat("ab", 32) + `"`, arg: `"--ctx-size=8192"`,
		lane: `"l"`, port: `8081`, podPool: `"jobs"`, image: `"ghcr.io/acme/harness:1.2"`, namespace: `"jobs"`, cluster: `"sim"`, imageSync: `"sim"`,
		context: `"k3d-a"`, host: `"node-a"`, capacity: `3`, registry: `"k3d-reg:5051"`,
	}
}

// render writes the pool in lang and returns it with the line each field
// is on.
func (s stringsPool) render(lang Language) (string, map[string]int) {
	var b strings.Builder
	lines := map[string]int{}
	line := 1
	emit := func(format string, args ...any) {
		text := fmt.Sprintf(format, args...)
		b.WriteString(text)
		line += strings.Count(text, "\n")
	}
	open := func(kind, name string) {
		if lang == HCL {
			emit("%s %s {\n", kind, name)
		} else {
			emit("%s: %s: {\n", kind, name)
		}
	}
	block := func(kind string) {
		if lang == HCL {
			emit("%s {\n", kind)
		} else {
			emit("%s: {\n", kind)
		}
	}
	attr := func(field, key, value string) {
		lines[field] = line
		if lang == HCL {
			emit("%s = %s\n", key, value)
		} else {
			emit("%s: %s\n", key, value)
		}
	}
	open("pool", `"p"`)
	block("gateway")
	attr("gateway.plugin", "plugin", s.gateway)
	emit("}\n")
	lines["node name"] = line
	open("node", s.node)
	attr("address", "address", s.address)
	attr("memory_gb", "memory_gb", "64")
	attr("kube_context", "kube_context", s.kube)
	attr("ssh_user", "ssh_user", s.user)
	attr("ssh_port", "ssh_port", s.sshPort)
	attr("runtime", "runtime", s.runtime)
	emit("}\n")
	open("model", `"m"`)
	attr("path", "path", s.path)
	attr("source", "source", s.source)
	attr("sha256", "sha256", s.sha)
	attr("size_gb", "size_gb", "1")
	attr("memory_gb", "memory_gb", "2")
	attr("args", "args", "["+s.arg+"]")
	emit("}\n")
	lines["lane name"] = line
	open("lane", s.lane)
	attr("model", "model", `"m"`)
	attr("placement", "placement", "["+s.node+"]")
	attr("port", "port", s.port)
	emit("}\n")
	open("pod_pool", s.podPool)
	attr("image", "image", s.image)
	attr("namespace", "namespace", s.namespace)
	attr("cluster", "cluster", s.cluster)
	attr("image_sync", "image_sync", s.imageSync)
	if s.compact {
		// Compact members are written in full, so that each part sits
		// where it belongs whatever it holds.
		for _, f := range []string{"member context", "ssh_host", "capacity", "registry"} {
			lines[f] = line
		}
		attr("members", "members", `"`+unquote(s.context)+"@"+unquote(s.host)+":"+unquote(s.capacity)+"#"+unquote(s.registry)+`"`)
	} else {
		lines["member context"] = line
		open("member", s.context)
		attr("ssh_host", "ssh_host", s.host)
		attr("capacity", "capacity", s.capacity)
		attr("registry", "registry", s.registry)
		emit("}\n")
	}
	emit("}\n}\n")
	return b.String(), lines
}

func unquote(v string) string { return strings.TrimSuffix(strings.TrimPrefix(v, `"`), `"`) }

// q quotes s for both HCL and CUE: both read \uXXXX, neither reads Go's \x.
func q(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

type stringCase struct {
	field string
	set   func(*stringsPool, string)
	bad   []string // source text of values that must be refused
	good  []string // and of values that must be accepted
}

func str(vals ...string) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = q(v)
	}
	return out
}

// shellish are values no string that reaches a shell, a path or an object
// name may hold.
var shellish = []string{"", "a;rm -rf /", "$(id)", "`id`", "a b", "a\nb", "a'b", "a\"b", "a|b", "a&b", "a>b", "-oProxyCommand=x", "a\x00b", "a\\b", "é"}

func stringCases() []stringCase {
	hostBad := append(str(shellish...), str("Spark-01.lan", "spark-01.lan.", "spark-01.lan:22", "n.lan:2222", "[::1]", "010.0.0.1", "1.2.3", "::FFFF:10.0.0.1", "::ffff:10.0.0.1", "0:0:0:0:0:0:0:1", "fe80::1%eth0", "a..b", "-a", "a_b", strings.Repeat("a", 64), strings.Repeat("a.", 127)+"a")...)
	hostGood := str("n.lan", "10.0.0.1", "::1", "fe80::1", "spark-01", strings.Repeat("a", 63))
	nameBad := append(str(shellish...), str("Lane", "-l", "l-", strings.Repeat("l", 64), "cloud/x", "l..", "../x")...)
	return []stringCase{
		{"address", func(p *stringsPool, v string) { p.address = v }, hostBad, hostGood},
		{"ssh_host", func(p *stringsPool, v string) { p.host = v }, hostBad, hostGood},
		{"kube_context", func(p *stringsPool, v string) { p.kube = v }, append(str(shellish...), str("-ctx", "ctx.", strings.Repeat("c", 254), "a:b", "a@b", "a#b", "a,b")...), str("k3d-lab", "kind-Kind", "CTX_1.x", strings.Repeat("c", 253))},
		{"member context", func(p *stringsPool, v string) { p.context = v }, append(str(shellish...), str("-ctx", "ctx.", strings.Repeat("c", 254))...), str("k3d-lab", "kind-Kind", "CTX_1.x", strings.Repeat("c", 253))},
		{"namespace", func(p *stringsPool, v string) { p.namespace = v }, append(str(shellish...), str("Jobs", "jobs.x", "jobs_x", "-jobs", "jobs-", strings.Repeat("j", 64))...), str("jobs", "j-1", strings.Repeat("j", 63))},
		{"image", func(p *stringsPool, v string) { p.image = v }, append(str(shellish...), str("Harness", "harness:", "harness@sha256:abc", ":tag", "a//b", "/a", "a/", "harness:-x", "harness:"+strings.Repeat("t", 129), "a__-b", "a/"+strings.Repeat("b", 255)+":1")...), str("harness", "ghcr.io/acme/harness:1.2", "localhost:5000/a/b_c.d__e-f", "Registry.Example:443/x", "harness@sha256:"+strings.Repeat("ab", 32), "[::1]:5000/x:latest")},
		{"registry", func(p *stringsPool, v string) { p.registry = v }, append(str(shellish...), str("k3d-r", "reg:5000", "k3d-:5000", "k3d-R:5000", "k3d-r:0", "k3d-r:05000", "k3d-r:65536", "k3d-r:5000.0", "k3d-r.:5000", "k3d-"+strings.Repeat("r", 61)+":5000")...), str("k3d-reg:5051", "k3d-reg.localhost:65535", "k3d-a-b:1")},
		{"path", func(p *stringsPool, v string) { p.path = v }, append(str(shellish...), str("m.gguf", "/models/../etc/passwd", "/models/./m", "/models//m", "/models/", "/", "/..", "~/m", "/m/"+strings.Repeat("a", 1000), "/m*", "/m?", "/$HOME/m")...), str("/m.gguf", "/models/qwen3-27b-q4_k_m.gguf", "/models/.cache/m@v1+2", "/a..b")},
		{"source", func(p *stringsPool, v string) { p.source = v }, append(str(shellish...), str("ftp://x/m", "host:relative", "Host:/m", "host:/a/../b", "https://x/m y", "https://x/`id`", "https:///m", "https://?x=1", "/models/m.gguf", "file://relative", "file:/m.gguf", "https:/x/m.gguf", "http:/m", "file://host/m.gguf", "file://localhost/m.gguf", "file:///a/../b", "file:///a/./b", "file:///a//b", "file:///", "file:///m y", "file:///m;id", "file:///$HOME/m", "file:///m/"+strings.Repeat("a", 1000))...), str("https://weights.example/m.gguf?x=1&y=2", "http://10.0.0.1:8000/m", "nas.lan:/models/m.gguf", "file:///srv/models/m.gguf", "file:///home/ops/.cache/m@v1+2.gguf", "file:///etc/passwd")},
		{"args", func(p *stringsPool, v string) { p.arg = v }, str("a\nb", "a\x00b", "a\rb", "a\x7fb"), str("--ctx-size=8192", "a b", "$(id)", "")},
		{"ssh_user", func(p *stringsPool, v string) { p.user = v }, append(str(shellish...), str("Ops", "1ops", strings.Repeat("u", 33), "ops@x")...), str("ops", "_svc", "a-b_c1", strings.Repeat("u", 32))},
		{"sha256", func(p *stringsPool, v string) { p.sha = v }, append(str(shellish...), str(strings.Repeat("AB", 32), strings.Repeat("ab", 31), strings.Repeat("ab", 33), strings.Repeat("g", 64))...), str(strings.Repeat("0", 64))},
		{"runtime", func(p *stringsPool, v string) { p.runtime = v }, nameBad, str("sim")},
		{"gateway.plugin", func(p *stringsPool, v string) { p.gateway = v }, nameBad, str("sim")},
		{"cluster", func(p *stringsPool, v string) { p.cluster = v }, nameBad, str("sim")},
		{"image_sync", func(p *stringsPool, v string) { p.imageSync = v }, nameBad, str("sim")},
		{"lane name", func(p *stringsPool, v string) { p.lane = v }, nameBad, str("l", "chat.v2_x", strings.Repeat("l", 63))},
		{"node name", func(p *stringsPool, v string) { p.node = v }, nameBad, str("n", strings.Repeat("n", 63))},
		{"ssh_port", func(p *stringsPool, v string) { p.sshPort = v }, []string{"0", "65536", "22.5", "022", "0x16", "2_2", `"22"`}, []string{"22", "22.0", "2.2e1", "65535"}},
		{"port", func(p *stringsPool, v string) { p.port = v }, []string{"0", "65536", "8081.5", "08081", "0x1F91", "0o17621", "8_081", "8K", ".5", `"8081"`, "-8081"}, []string{"8081", "8081.0", "8.081e3", "80810e-1"}},
		{"capacity", func(p *stringsPool, v string) { p.capacity = v }, []string{"0", "2.5", "02", `"x"`, "-1", "0x2"}, []string{"1", "2.0", "10"}},
	}
}

// memberField says whether a field belongs to a pod-pool member, and so
// is tried in the compact form too.
func memberField(f string) bool {
	return f == "member context" || f == "ssh_host" || f == "capacity" || f == "registry"
}

// compactSafe says whether a member value can be written in the compact
// form and still be read as that one value: it holds none of the list's
// separators nor anything needing an escape.
func compactSafe(v string) bool {
	u := unquote(v)
	return !strings.ContainsAny(u, `,@:#"\`) && strings.TrimSpace(u) == u && u != "" && utf8.ValidString(u) && !strings.ContainsAny(u, "\x00\n\r\t\x7f")
}

// Every string (and port) rule holds alike in HCL and CUE, and, for a
// pod-pool member, alike in the compact string and the member block: each
// bad value is refused, at the line of the field, with the same message;
// each good value loads.
func TestStringRules(t *testing.T) {
	refused, accepted := 0, 0
	defer func() {
		t.Logf("%d bad values refused and %d good values accepted, across fields, languages and member forms", refused, accepted)
	}()
	for _, c := range stringCases() {
		type form struct {
			lang    Language
			compact bool
		}
		forms := []form{{HCL, false}, {CUE, false}}
		if memberField(c.field) {
			forms = append(forms, form{HCL, true}, form{CUE, true})
		}
		try := func(v string, f form) (pools.Diagnostics, int, bool) {
			p := validStrings()
			c.set(&p, v)
			p.compact = f.compact
			if f.compact && c.field == "member context" && !compactSafe(v) {
				return nil, 0, false
			}
			if f.compact && !compactSafe(v) && c.field != "capacity" {
				return nil, 0, false
			}
			src, lines := p.render(f.lang)
			_, diags := Compile([]File{{Name: "p." + string(f.lang), Src: []byte(src)}})
			return diags, lines[c.field], true
		}
		for _, v := range c.good {
			for _, f := range forms {
				if diags, _, ok := try(v, f); ok && len(diags) > 0 {
					t.Errorf("%s = %s (%s, compact %v) was refused: %v", c.field, v, f.lang, f.compact, diags.Err())
				} else if ok {
					accepted++
				}
			}
		}
		for _, v := range c.bad {
			var msgs []string
			for _, f := range forms {
				diags, line, ok := try(v, f)
				if !ok {
					continue
				}
				var at *pools.Diagnostic
				for i := range diags {
					if diags[i].Severity == pools.Error && diags[i].Pos.Line == line {
						at = &diags[i]
						break
					}
				}
				if at == nil {
					t.Errorf("%s = %s (%s, compact %v): want an error at line %d, got %v", c.field, v, f.lang, f.compact, line, diags)
					continue
				}
				if at.Pos.File == "" || at.Pos.Col < 1 {
					t.Errorf("%s = %s (%s): error without file:line:col: %v", c.field, v, f.lang, at)
				}
				refused++
				msgs = append(msgs, at.Message)
			}
			if sameLanguage(v) && len(msgs) > 0 {
				for _, m := range msgs[1:] {
					if m != msgs[0] {
						t.Errorf("%s = %s: the forms disagree:\n  %s\n  %s", c.field, v, msgs[0], m)
					}
				}
			}
		}
	}
}

// sameLanguage says whether both languages can tell a value's problem in
// the same words: a number spelling one language's parser refuses before
// poolc sees it (0x1F91 in HCL) gets that parser's message there.
func sameLanguage(v string) bool {
	return !strings.HasPrefix(v, "0x") && !strings.HasPrefix(v, "0o") && !strings.HasPrefix(v, ".") && !strings.Contains(v, "_") && !strings.HasSuffix(v, "K") && !strings.HasPrefix(v, "-")
}

// Two nodes cannot reach one host under two spellings: a second spelling
// is refused, and one spelling twice is a duplicate.
func TestOneSpellingPerHost(t *testing.T) {
	for _, tc := range []struct{ a, b, code string }{
		{"spark-01.lan", "Spark-01.lan", "bad-format"},
		{"spark-01.lan", "spark-01.lan.", "bad-format"},
		{"spark-01.lan", "spark-01.lan:22", "bad-format"},
		{"10.0.0.1", "::ffff:10.0.0.1", "bad-format"},
		{"fe80::1", "fe80:0:0:0:0:0:0:1", "bad-format"},
		{"spark-01.lan", "spark-01.lan", "duplicate-address"},
		{"fe80::1", "fe80::1", "duplicate-address"},
	} {
		for _, lang := range []Language{HCL, CUE} {
			p := validStrings()
			src, _ := p.render(lang)
			var second string
			if lang == HCL {
				second = fmt.Sprintf("node \"n2\" {\naddress = %s\nmemory_gb = 8\n}\n", q(tc.b))
			} else {
				second = fmt.Sprintf("node: \"n2\": {\naddress: %s\nmemory_gb: 8\n}\n", q(tc.b))
			}
			src = strings.Replace(src, `"n.lan"`, q(tc.a), 1)
			src = strings.TrimSuffix(src, "}\n") + second + "}\n"
			_, diags := Compile([]File{{Name: "p." + string(lang), Src: []byte(src)}})
			found := false
			for _, d := range diags {
				found = found || d.Code == tc.code
			}
			if !found {
				t.Errorf("%s: %q beside %q: want %s, got %v", lang, tc.a, tc.b, tc.code, diags)
			}
		}
	}
}

// A namespace taken from the pod pool's name must be a DNS label too.
func TestDefaultNamespaceIsADNSLabel(t *testing.T) {
	for _, lang := range []Language{HCL, CUE} {
		p := validStrings()
		p.podPool = `"jobs_x"`
		src, _ := p.render(lang)
		src = strings.Replace(src, "namespace", "# namespace", 1)
		if lang == CUE {
			src = strings.Replace(src, "# namespace", "// namespace", 1)
		}
		_, diags := Compile([]File{{Name: "p." + string(lang), Src: []byte(src)}})
		if len(diags) != 1 || !strings.Contains(diags[0].Message, "not a DNS-1123 label") || diags[0].Pos.Line == 0 {
			t.Errorf("%s: got %v, want one error about the namespace", lang, diags)
		}
	}
}

// An external plugin's path must be pinned unless it stays in the pool's
// plugin directory; otherwise whatever binary is there would run.
func TestUnpinnedPluginPathsAreRefused(t *testing.T) {
	sum := `"` + strings.Repeat("0", 64) + `"`
	for _, tc := range []struct {
		decl string
		ok   bool
	}{
		{`path = "bin/poolc-plugin-x"`, false},
		{`path = "/usr/bin/env"`, false},
		{`path = "poolc-plugin-x"`, false},
		{`path = ".poolc/plugins/../../x"`, false},
		{`path = ".poolc/plugins/poolc-plugin-x"`, true},
		{`path = "bin/poolc-plugin-x"` + "\n sha256 = " + sum, true},
		{``, true},
		{`builtin = true`, true},
	} {
		for _, lang := range []Language{HCL, CUE} {
			p := validStrings()
			src, _ := p.render(lang)
			decl := "plugin \"x\" {\n" + tc.decl + "\n}\n"
			if lang == CUE {
				decl = "plugin: x: {\n" + strings.NewReplacer(" = ", ": ").Replace(tc.decl) + "\n}\n"
			}
			src = strings.TrimSuffix(src, "}\n") + decl + "}\n"
			_, diags := Compile([]File{{Name: "p." + string(lang), Src: []byte(src)}})
			refused := false
			for _, d := range diags {
				refused = refused || d.Code == "plugin-unpinned" && d.Pos.Line > 0
			}
			if refused == tc.ok {
				t.Errorf("%s: %q: refused %v, want %v (%v)", lang, tc.decl, refused, !tc.ok, diags)
			}
		}
	}
}
