package haproxy

import (
	"context"
	"flag"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestConfigGolden(t *testing.T) {
	cfg, mapText, err := Config(Spec{
		Bind:        "0.0.0.0:8000",
		AdminSocket: "/run/haproxy/poolc.sock",
		MapFile:     "/etc/haproxy/poolc-aliases.map",
		StateFile:   "/var/lib/haproxy/poolc-servers.state",
		Lanes:       []LaneBackend{{Lane: "scribe"}, {Lane: "cognition", Addr: "10.0.0.3", Port: 8081}},
		Aliases: []AliasRoute{{Alias: "chat", Lane: "cognition", Fallbacks: []string{"scribe", Cloud}},
			{Alias: "notes", Lane: "scribe"}, {Alias: "big", Lane: Cloud}},
		CloudAddr: "api.example.com:443",
	})
	if err != nil {
		t.Fatal(err)
	}
	fallbacks := FallbackMap(Spec{Aliases: []AliasRoute{{Alias: "chat", Lane: "cognition", Fallbacks: []string{"scribe", Cloud}}}})
	for name, got := range map[string]string{"spark.cfg": cfg, "spark.map": mapText, "spark.map.fallbacks": fallbacks} {
		path := filepath.Join("testdata", name)
		if *update {
			os.MkdirAll("testdata", 0o755)
			os.WriteFile(path, []byte(got), 0o644)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update)", err)
		}
		if got != string(want) {
			t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", name, got)
		}
	}
}

func TestConfigRefusesBadSpecs(t *testing.T) {
	good := Spec{Bind: "127.0.0.1:8000", AdminSocket: "/s", MapFile: "/m", StateFile: "/st"}
	for name, mod := range map[string]func(*Spec){
		"bind":         func(s *Spec) { s.Bind = "localhost:80" },
		"map":          func(s *Spec) { s.MapFile = "/m x" },
		"socket":       func(s *Spec) { s.AdminSocket = "ipv4@nowhere" },
		"lane":         func(s *Spec) { s.Lanes = []LaneBackend{{Lane: "a b"}} },
		"lane address": func(s *Spec) { s.Lanes = []LaneBackend{{Lane: "a", Addr: "host.lan", Port: 1}} },
		"alias":        func(s *Spec) { s.Aliases = []AliasRoute{{Alias: "a;b", Lane: Cloud}} },
		"alias lane":   func(s *Spec) { s.Aliases = []AliasRoute{{Alias: "a", Lane: "nope"}} },
		"cloud":        func(s *Spec) { s.CloudAddr = "x" },
	} {
		s := good
		mod(&s)
		if _, _, err := Config(s); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, _, err := Config(good); err != nil {
		t.Error(err)
	}
}

// answering serves one canned answer per connection on a unix socket and
// records the commands.
func answering(t *testing.T, answer string) (Dialer, *[]string) {
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var got []string
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 4096)
			n, _ := c.Read(b)
			got = append(got, string(b[:n]))
			c.Write([]byte(answer))
			c.Close()
		}
	}()
	return UnixSocket(sock), &got
}

func TestExecSendsOneLineAndReadsFailures(t *testing.T) {
	dial, got := answering(t, "\n")
	rt := Runtime{Dial: dial}
	if _, err := rt.Exec(context.Background(), "set", "map", "/m", "chat", "lane_a"); err != nil {
		t.Fatal(err)
	}
	if len(*got) != 1 || (*got)[0] != "set map /m chat lane_a\n" {
		t.Errorf("sent %q", *got)
	}
	for _, w := range []string{"a;b", "a b", "a\nshow info", `a\b`, ""} {
		if _, err := rt.Exec(context.Background(), "set", "map", "/m", w, "x"); err == nil {
			t.Errorf("word %q sent", w)
		}
	}
	dial, _ = answering(t, "No such server.\n")
	if _, err := (Runtime{Dial: dial}).Exec(context.Background(), "set", "server", "a/b", "state", "ready"); err == nil || !strings.Contains(err.Error(), "No such server") {
		t.Errorf("err = %v", err)
	}
}

const serversState = `1
# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port
3 lane_cognition 1 s1 127.0.0.1 0 1 1 1 6 1 0 0 0 0 0 0 - 32983 - 0 0 - - 0
3 lane_cognition 2 s2 127.0.0.1 2 4 1 1 7 1 0 0 8 0 0 0 - 41321 - 0 0 - - 0
4 lane_scribe 1 s1 127.0.0.1 2 8 1 1 3 1 0 0 8 0 0 0 - 46311 - 0 0 - - 0
4 lane_scribe 2 s2 127.0.0.1 0 5 1 1 8 1 0 0 8 0 0 0 - 1 - 0 0 - - 0
`

func TestParseServersState(t *testing.T) {
	srvs, err := parseServersState(serversState)
	if err != nil {
		t.Fatal(err)
	}
	if len(srvs) != 4 {
		t.Fatalf("%+v", srvs)
	}
	// Admin 1: forced maintenance. 4: configured "disabled", since made
	// ready. 8: forced drain. 5: disabled and in maintenance.
	for i, want := range []string{"maint", "ready", "drain", "maint"} {
		s := srvs[i]
		got := map[bool]string{true: "maint"}[s.Maint()] + map[bool]string{true: "ready"}[s.Ready()] + map[bool]string{true: "drain"}[s.Draining()]
		if got != want {
			t.Errorf("%s/%s admin %d: %s, want %s", s.Backend, s.Name, s.Admin, got, want)
		}
	}
	if srvs[1].Port != 41321 || srvs[1].Addr != "127.0.0.1" || srvs[1].Backend != "lane_cognition" {
		t.Errorf("%+v", srvs[1])
	}
	if _, err := parseServersState("1\n3 x 1 s1\n"); err == nil {
		t.Error("a line before the header accepted")
	}
}

func TestParseMapAndSessions(t *testing.T) {
	m, err := parseMap("0x55d0 chat lane_a\n0x55d1 big cloud\n")
	if err != nil || m["chat"] != "lane_a" || m["big"] != "cloud" {
		t.Fatalf("%v %v", m, err)
	}
	if _, err := parseMap("0x1 a\n"); err == nil {
		t.Error("short map line accepted")
	}
	s, err := parseSessions("# pxname,svname,qcur,qmax,scur,smax\nllm,FRONTEND,,,3,5\nlane_a,s1,0,0,2,4\nlane_a,BACKEND,0,0,2,4\n")
	if err != nil || s["lane_a/s1"] != 2 || s["llm/FRONTEND"] != 3 {
		t.Fatalf("%v %v", s, err)
	}
	if laneOfBackend("lane_a") != "a" || laneOfBackend("cloud") != Cloud || laneOfBackend("other") != "" {
		t.Error("laneOfBackend")
	}
}

func FuzzParseServersState(f *testing.F) {
	f.Add(serversState)
	f.Fuzz(func(t *testing.T, s string) { parseServersState(s) })
}

func FuzzParseSessions(f *testing.F) {
	f.Add("# pxname,svname,scur\na,b,1\n")
	f.Fuzz(func(t *testing.T, s string) { parseSessions(s) })
}

func FuzzParseMap(f *testing.F) {
	f.Add("0x1 chat lane_a\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseMap(s)
		if err == nil {
			for k, v := range m {
				if strings.ContainsAny(k+v, " \t\n") {
					t.Fatalf("entry %q %q", k, v)
				}
			}
		}
	})
}
