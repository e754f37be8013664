package memest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gguf "github.com/gpustack/gguf-parser-go"
	"poolc.dev/poolc/internal/testing/gguftest"
)

var models = map[string]gguftest.Model{
	"llama-1b":    {Arch: "llama", Context: 8192, Embedding: 2048, FeedForward: 8192, Layers: 16, Heads: 32, KVHeads: 8, Vocab: 32000},
	"qwen2-3b":    {Arch: "qwen2", Context: 32768, Embedding: 2560, FeedForward: 9728, Layers: 24, Heads: 20, KVHeads: 4, Vocab: 151936},
	"llama-1b-q4": {Arch: "llama", Type: "q4_0", Context: 131072, Embedding: 2048, FeedForward: 8192, Layers: 16, Heads: 32, KVHeads: 8, Vocab: 128256},
	"qwen3-8b":    {Arch: "qwen3", Context: 40960, Embedding: 4096, FeedForward: 12288, Layers: 36, Heads: 32, KVHeads: 8, Vocab: 151936},
}

// The estimate is gguf-parser-go's own for the same options: the file
// parsed with its API, estimated with the options spelt out by hand, its
// devices' footprint, weights, KV cache and compute summed.
func TestEstimateAgreesWithTheParser(t *testing.T) {
	dir := t.TempDir()
	var e Estimator
	for name, m := range models {
		path := filepath.Join(dir, name+".gguf")
		if err := m.Write(path); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.ParseGGUFFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			args []string
			opts []gguf.GGUFRunEstimateOption
		}{
			{nil, []gguf.GGUFRunEstimateOption{gguf.WithParallelSize(4)}},
			{[]string{"-c", "4096"}, []gguf.GGUFRunEstimateOption{gguf.WithParallelSize(4), gguf.WithLLaMACppContextSize(4096)}},
			{[]string{"--ctx-size=16384", "-np", "1", "-fa", "on", "-ctk", "q8_0", "-ctv", "q8_0"},
				[]gguf.GGUFRunEstimateOption{gguf.WithParallelSize(1), gguf.WithLLaMACppContextSize(16384), gguf.WithFlashAttention(),
					gguf.WithLLaMACppCacheKeyType(gguf.GGMLTypeQ8_0), gguf.WithLLaMACppCacheValueType(gguf.GGMLTypeQ8_0)}},
			{[]string{"-c", "2048", "-b", "512", "-ub", "256", "--parallel", "8"},
				[]gguf.GGUFRunEstimateOption{gguf.WithParallelSize(8), gguf.WithLLaMACppContextSize(2048),
					gguf.WithLLaMACppLogicalBatchSize(512), gguf.WithLLaMACppPhysicalBatchSize(256)}},
		} {
			got, err := e.Estimate(context.Background(), Model{Source: "file://" + path, Args: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			var want uint64
			for _, d := range f.EstimateLLaMACppRun(tc.opts...).Devices {
				want += uint64(d.Footprint + d.Weight.Sum() + d.KVCache.Sum() + d.Computation.Sum())
			}
			if got.Bytes != want {
				t.Errorf("%s %v: estimate %d bytes, gguf-parser-go says %d", name, tc.args, got.Bytes, want)
			}
			if got.Weights+got.KV+got.Compute != got.Bytes || got.Arch != m.Arch {
				t.Errorf("%s %v: parts %d+%d+%d of %d, arch %q", name, tc.args, got.Weights, got.KV, got.Compute, got.Bytes, got.Arch)
			}
			t.Logf("%s %v: %.2f GB (weights %d, KV %d, compute %d, ctx %d)", name, tc.args, got.GB, got.Weights, got.KV, got.Compute, got.Context)
		}
	}
}

// A longer context holds a larger KV cache; a quantised cache a smaller one.
func TestContextAndCacheTypeDriveTheEstimate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := models["qwen3-8b"].Write(path); err != nil {
		t.Fatal(err)
	}
	var e Estimator
	est := func(args ...string) Estimate {
		t.Helper()
		got, err := e.Estimate(context.Background(), Model{Source: "file://" + path, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	short, long, q8 := est("-c", "4096"), est("-c", "32768"), est("-c", "32768", "-ctk", "q8_0", "-ctv", "q8_0")
	if !(short.KV < long.KV && q8.KV < long.KV && short.Weights == long.Weights) {
		t.Errorf("KV: ctx 4096 %d, ctx 32768 %d, q8_0 %d; weights %d vs %d", short.KV, long.KV, q8.KV, short.Weights, long.Weights)
	}
	if d := est(); d.Context != 40960 {
		t.Errorf("no -c: context %d, want the training context 40960", d.Context)
	}
}

// A remote header is read with range requests: the bytes the server sends
// are a small part of the file.
func TestRemoteEstimateReadsOnlyTheHeader(t *testing.T) {
	m := models["qwen3-8b"]
	_, size := m.Header()
	var sent, ranged atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Range") != "" {
			ranged.Add(1)
		}
		http.ServeContent(counting{w, &sent}, r, "m.gguf", time.Time{}, m.Reader())
	}))
	defer srv.Close()
	var e Estimator
	remote, err := e.Estimate(context.Background(), Model{Source: srv.URL + "/m.gguf", Args: []string{"-c", "8192"}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := m.Write(path); err != nil {
		t.Fatal(err)
	}
	local, err := e.Estimate(context.Background(), Model{Source: "file://" + path, Args: []string{"-c", "8192"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("file size %d bytes, bytes read over HTTP %d in %d range requests; estimate %.2f GB", size, sent.Load(), ranged.Load(), remote.GB)
	if remote.Bytes != local.Bytes {
		t.Errorf("remote estimate %d, local %d", remote.Bytes, local.Bytes)
	}
	if ranged.Load() == 0 || sent.Load()*100 > size {
		t.Errorf("read %d of %d bytes in %d range requests: want range requests reading under 1%% of the file", sent.Load(), size, ranged.Load())
	}
	// The header is cached by source: a second estimate reads nothing.
	before := sent.Load()
	if _, err := e.Estimate(context.Background(), Model{Source: srv.URL + "/m.gguf", Args: []string{"-c", "2048"}}); err != nil || sent.Load() != before {
		t.Errorf("second estimate: err %v, read %d more bytes", err, sent.Load()-before)
	}
}

// A remote model with a sha256 is parsed once per cache directory: a
// second estimator with the same directory estimates with the file gone
// from the server.
func TestDiskCacheByDigest(t *testing.T) {
	m := models["llama-1b-q4"]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "m.gguf", time.Time{}, m.Reader())
	}))
	model := Model{Source: srv.URL + "/m.gguf", SHA256: strings.Repeat("ab", 32), Args: []string{"-c", "4096"}}
	dir := t.TempDir()
	first, err := (&Estimator{CacheDir: dir}).Estimate(context.Background(), model)
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	defer gone.Close()
	model.Source = gone.URL + "/m.gguf"
	again, err := (&Estimator{CacheDir: dir}).Estimate(context.Background(), model)
	if err != nil {
		t.Fatalf("from the cache: %v", err)
	}
	if again != first {
		t.Errorf("from the cache %+v, from the server %+v", again, first)
	}
	model.SHA256 = strings.Repeat("cd", 32)
	if _, err := (&Estimator{CacheDir: dir}).Estimate(context.Background(), model); err == nil {
		t.Error("another digest was answered from the cache")
	}
}

type counting struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c counting) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func TestUnreadableSources(t *testing.T) {
	var e Estimator
	for _, src := range []string{"", "nas.lan:/srv/m.gguf"} {
		if _, err := e.Estimate(context.Background(), Model{Source: src}); err != ErrNoReadableSource {
			t.Errorf("source %q: err %v, want ErrNoReadableSource", src, err)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	if err := os.WriteFile(bad, []byte("GGUF but not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Estimate(context.Background(), Model{Source: "file://" + bad}); err == nil || !strings.Contains(err.Error(), "not a GGUF header") {
		t.Errorf("bad file: err %v", err)
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	if _, err := e.Estimate(context.Background(), Model{Source: srv.URL + "/x.gguf?token=secret"}); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("404: err %v, want an error without the query", err)
	}
}

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		err  string
	}{
		{nil, "ctx of the model (default), 4 slots (default), KV f16/f16 (default), flash attention off (default), batch 2048/512 (default)", ""},
		{[]string{"--embedding", "-c", "32768", "-np", "-1", "--flash-attn", "auto", "-ctk", "Q8_0"}, "ctx 32768, 4 slots (default), KV q8_0/f16, flash attention off (default), batch 2048/512 (default)", ""},
		{[]string{"-fa", "-np=2", "-ub", "128"}, "ctx of the model (default), 2 slots, KV f16/f16 (default), flash attention on, batch 2048/128", ""},
		{[]string{"-c", "lots"}, "", `-c "lots": want a positive whole number`},
		{[]string{"-ctv", "q3_k"}, "", `-ctv "q3_k": not a KV cache type`},
		{[]string{"--parallel", "0"}, "", `--parallel "0": want a positive whole number, or -1 for auto`},
		{[]string{"-c"}, "", "-c needs a value"},
	} {
		a, err := ParseArgs(tc.args)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.err == "" && a.String() != tc.want:
			t.Errorf("%v:\n got %s\nwant %s", tc.args, a, tc.want)
		}
	}
}
