package membership

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseMeminfo(t *testing.T) {
	total, free, err := ParseMeminfo([]byte("MemTotal:       131072000 kB\nMemFree:         1000000 kB\nMemAvailable:   65536000 kB\nHugePages_Total:       0\n"))
	if err != nil || total != 131072000*1024/1e9 || free != 65536000*1024/1e9 {
		t.Fatalf("got %v %v %v", total, free, err)
	}
	if _, free, _ := ParseMeminfo([]byte("MemTotal: 2000 kB\nMemFree: 1000 kB\n")); free != 1000*1024/1e9 {
		t.Errorf("without MemAvailable: free %v", free)
	}
	if _, _, err := ParseMeminfo([]byte("MemFree: 1 kB\n")); err == nil {
		t.Error("no MemTotal accepted")
	}
}

func FuzzParseMeminfo(f *testing.F) {
	f.Add([]byte("MemTotal: 1 kB\nMemAvailable: 2 kB\n"))
	f.Add([]byte("MemTotal:\nMemFree: x kB\n:::"))
	f.Fuzz(func(t *testing.T, data []byte) {
		total, free, err := ParseMeminfo(data)
		if err == nil && (total < 0 || free < 0 || free > total) {
			t.Fatalf("total %v free %v", total, free)
		}
	})
}

// The sampler finds llama-server processes by their name and reports
// their command lines without the control characters a hostile one has.
func TestSampleListsLlamaServersCleanly(t *testing.T) {
	proc := t.TempDir()
	write := func(name, data string) {
		os.MkdirAll(filepath.Dir(filepath.Join(proc, name)), 0o755)
		if err := os.WriteFile(filepath.Join(proc, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("meminfo", "MemTotal: 1000000 kB\nMemAvailable: 500000 kB\n")
	write("41/comm", "llama-server\n")
	write("41/cmdline", "llama-server\x00--port\x008081\x00-m\x00/m/q\x1b[2J.gguf\x00")
	write("42/comm", "bash\n")
	write("42/cmdline", "bash\x00")
	rep, err := Sampler{Proc: proc}.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.LlamaServers) != 1 || rep.LlamaServers[0].PID != 41 || rep.LlamaServers[0].Command != "llama-server --port 8081 -m /m/q[2J.gguf" {
		t.Fatalf("llama servers: %+v", rep.LlamaServers)
	}
	if rep.MemoryTotalGB != 1.024 || rep.MemoryFreeGB != 0.512 {
		t.Errorf("memory: %+v", rep)
	}
}

func TestCleanStripsControlAndFormatCharacters(t *testing.T) {
	in := "spark\x1b]0;owned\x07-03\u202e\r\n\t" + strings.Repeat("x", 400)
	got := Clean(in)
	if strings.ContainsAny(got, "\x1b\x07\r\n\t\u202e") || !strings.HasPrefix(got, "spark]0;owned-03") || len(got) > 260 {
		t.Fatalf("Clean = %q", got)
	}
}
