package llama

import (
	"encoding/hex"
	"slices"
	"strings"
	"testing"
)

func TestParseMetrics(t *testing.T) {
	m, err := parseMetrics("# HELP x\n# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 2\nllamacpp:requests_deferred 1\nx{a=\"b c\"} 3\nx{a=\"d\"} 4 1700000000\n")
	if err != nil {
		t.Fatal(err)
	}
	if m["llamacpp:requests_processing"] != 2 || m["llamacpp:requests_deferred"] != 1 || m["x"] != 7 {
		t.Errorf("%v", m)
	}
	for _, bad := range []string{"x\n", "x{a=\"b\" 1\n", "x y\n"} {
		if _, err := parseMetrics(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseStatus(t *testing.T) {
	argv := hex.EncodeToString([]byte("llama-server\x00--host\x000.0.0.0\x00--port\x008081\x00-m\x00/m/a\x00--metrics\x00--slots\x00--temp\x00a b\tc\x00"))
	st, err := parseStatus("lane\ta\t42\t1\t2048\t{\"name\":\"a\",\"port\":8081,\"model\":\"/m/a\"}\thex:" + argv + "\nmem\tMemTotal:\t1024\nmem\tMemAvailable:\t512\n")
	if err != nil {
		t.Fatal(err)
	}
	r := st.records["a"]
	if r.pid != 42 || !r.alive || r.meta.Port != 8081 || r.rss != 2<<20 || st.memTotal != 1<<20 || st.memFree != 512<<10 {
		t.Errorf("%+v %+v", st, r)
	}
	if c, err := parseCommand(r.argv); err != nil || !slices.Equal(c.Args, []string{"--temp", "a b\tc"}) || c.Host != "0.0.0.0" {
		t.Errorf("%+v %v", c, err)
	}
	if !r.isLane(r.meta.lane()) {
		t.Error("the record is not its lane")
	}
	for _, bad := range []string{"lane\ta\tx\t1\t0\t\t\n", "lane\ta\n", "mem\tMemTotal:\t-5\n", "junk\n", "lane\ta\t1\t1\t0\t{bad\t\n",
		"lane\ta\t1\t1\t-1\t\t\n", "lane\ta\t1\t1\t0\t\thex:zz\n", "lane\ta\t1\t1\t0\t\twhat\n"} {
		if _, err := parseStatus(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseProbe(t *testing.T) {
	p, err := parseProbe("have\t10\ncache\t" + strings.Repeat("a", 64) + " 10\npart\t-1\nfree\t99\n")
	if err != nil || p.Size != 10 || p.Part != -1 || p.FreeKB != 99 || p.cachedSHA() != strings.Repeat("a", 64) {
		t.Fatalf("%+v %v", p, err)
	}
	p.Size = 11
	if p.cachedSHA() != "" {
		t.Error("a digest recorded for another size is used")
	}
	if _, err := parseProbe("have\t10\n"); err == nil {
		t.Error("incomplete probe accepted")
	}
}

func FuzzParseMetrics(f *testing.F) {
	f.Add("llamacpp:requests_processing 2\n")
	f.Add("x{a=\"}\"} 1\n# c\n")
	f.Fuzz(func(t *testing.T, s string) { parseMetrics(s) })
}

func FuzzParseStatus(f *testing.F) {
	f.Add("lane\ta\t42\t1\t{\"name\":\"a\"}\targs\nmem\tMemTotal:\t1\n")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := parseStatus(s)
		if err != nil {
			return
		}
		if len(st.order) != len(st.records) {
			t.Fatalf("order %v, records %v", st.order, st.records)
		}
		for _, r := range st.records {
			if r.pid < 0 {
				t.Fatalf("negative pid %d", r.pid)
			}
		}
	})
}

func FuzzParseProbe(f *testing.F) {
	f.Add("have\t10\ncache\t\npart\t-1\nfree\t99\n")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseProbe(s)
		if err == nil && (p.Size < -1 || p.Part < -1) {
			t.Fatalf("%+v", p)
		}
	})
}
