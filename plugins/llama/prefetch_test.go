package llama

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"poolc.dev/poolc/internal/sshx"
	"poolc.dev/poolc/schema"
)

func weights(t *testing.T, size int) ([]byte, string) {
	b := make([]byte, size)
	rand.Read(b)
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

func TestPrefetchOfALocalFileResumesVerifiesAndSkips(t *testing.T) {
	ctx := context.Background()
	n := NewNode(Local{}, testSettings(t))
	data, sum := weights(t, 1<<20)
	src := filepath.Join(t.TempDir(), "src.gguf")
	os.WriteFile(src, data, 0o644)
	dst := filepath.Join(t.TempDir(), "models", "m.gguf")
	// An earlier copy was cut after 300,000 bytes.
	os.MkdirAll(filepath.Dir(dst), 0o755)
	os.WriteFile(dst+".part", data[:300_000], 0o644)

	var last int64
	res, err := n.Prefetch(ctx, Model{Path: dst, Source: "file://" + src, SHA256: sum}, func(done, total int64) {
		if total != int64(len(data)) || done < last {
			t.Errorf("progress %d/%d after %d", done, total, last)
		}
		last = done
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped || res.ResumedAt != 300_000 || res.Sent != int64(len(data))-300_000 || last != int64(len(data)) {
		t.Errorf("result %+v, last progress %d", res, last)
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, data) {
		t.Fatal("the copy differs from the source")
	}
	if _, err := os.Stat(dst + ".part"); !os.IsNotExist(err) {
		t.Errorf("partial file left: %v", err)
	}
	obs, err := n.Observe(ctx, []string{dst, dst + ".absent"})
	if err != nil || len(obs.Models) != 1 || obs.Models[0].SHA256 != sum || obs.Models[0].Size != int64(len(data)) {
		t.Fatalf("observed models %+v %v", obs.Models, err)
	}
	res, err = n.Prefetch(ctx, Model{Path: dst, Source: "file://" + src, SHA256: sum}, nil)
	if err != nil || !res.Skipped || res.Sent != 0 {
		t.Errorf("second prefetch %+v %v", res, err)
	}
}

func TestPrefetchWithAWrongDigestLeavesNoFile(t *testing.T) {
	n := NewNode(Local{}, testSettings(t))
	data, _ := weights(t, 100_000)
	_, other := weights(t, 10)
	src := filepath.Join(t.TempDir(), "src.gguf")
	os.WriteFile(src, data, 0o644)
	dir := filepath.Join(t.TempDir(), "models")
	dst := filepath.Join(dir, "m.gguf")
	_, err := n.Prefetch(context.Background(), Model{Path: dst, Source: "file://" + src, SHA256: other}, nil)
	var de *DigestError
	if !errors.As(err, &de) || de.Want != other || !strings.Contains(err.Error(), "nothing is written at "+dst) {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left under %s: %v", dir, entries)
	}
}

func TestPrefetchOverHTTPResumesWithARangeRequest(t *testing.T) {
	data, sum := weights(t, 1<<20)
	var served atomic.Int64
	var ranges []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ranges = append(ranges, r.Header.Get("Range"))
		cw := &countingWriter{w: w, n: &served}
		http.ServeContent(cw, r, "m.gguf", time.Time{}, bytes.NewReader(data))
	}))
	defer srv.Close()
	n := NewNode(Local{}, testSettings(t))
	dst := filepath.Join(t.TempDir(), "m.gguf")
	os.WriteFile(dst+".part", data[:400_000], 0o644)
	res, err := n.Prefetch(context.Background(), Model{Path: dst, Source: srv.URL + "/m.gguf", SHA256: sum, SizeBytes: int64(len(data))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, data) {
		t.Fatal("the download differs from the source")
	}
	if served.Load() != int64(len(data))-400_000 || res.ResumedAt != 400_000 || res.Sent != int64(len(data))-400_000 {
		t.Errorf("server sent %d bytes (ranges %q), result %+v; want only the missing %d", served.Load(), ranges, res, len(data)-400_000)
	}
}

type countingWriter struct {
	w http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Header() http.Header  { return c.w.Header() }
func (c *countingWriter) WriteHeader(code int) { c.w.WriteHeader(code) }
func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func TestPrefetchRefusesWhenTheDiskIsTooSmall(t *testing.T) {
	n := NewNode(Local{}, testSettings(t))
	_, sum := weights(t, 10)
	dst := filepath.Join(t.TempDir(), "m.gguf")
	_, err := n.Prefetch(context.Background(), Model{Path: dst, Source: "http://127.0.0.1:1/m", SHA256: sum, SizeBytes: 1 << 60}, nil)
	var df *DiskFullError
	if !errors.As(err, &df) || !strings.Contains(err.Error(), strconv.FormatInt(1<<60, 10)+" bytes still to copy") {
		t.Fatalf("err = %v", err)
	}
}

func TestPrefetchRefusesBadInput(t *testing.T) {
	n := NewNode(Local{}, testSettings(t))
	_, sum := weights(t, 10)
	for _, m := range []Model{
		{Path: "rel/m.gguf", Source: "file:///x", SHA256: sum},
		{Path: "/m.gguf", Source: "file:///x", SHA256: "abc"},
		{Path: "/m.gguf", Source: "/x", SHA256: sum},
		{Path: "/m.gguf", Source: "ftp://h/x", SHA256: sum},
		{Path: "/m.gguf", Source: "x.gguf", SHA256: sum},
		{Path: "/m.gguf", Source: "file://other/x", SHA256: sum},
	} {
		if _, err := n.Prefetch(context.Background(), m, nil); err == nil {
			t.Errorf("%+v accepted", m)
		}
	}
}

func TestSourceKinds(t *testing.T) {
	for src, want := range map[string]string{
		"https://h/m.gguf":            "http",
		"http://h:8080/m":             "http",
		"nas.lan:/srv/models/m.gguf":  "remote",
		"file:///srv/m.gguf":          "file",
		"file:///srv/.cache/m@v1+2":   "file",
		"/srv/m.gguf":                 "",
		"file://localhost/srv/m.gguf": "",
		"file:/srv/m.gguf":            "",
		"https:/h/m.gguf":             "",
		"file://srv/m.gguf":           "",
		"file:///srv/../etc/passwd":   "",
		"file:///srv/./m":             "",
		"file:///srv//m":              "",
		"file:///srv/m y":             "",
		"file:///srv/$(id)":           "",
		"file:///":                    "",
		"-oProxyCommand=x:/m":         "",
		"nas.lan:relative":            "",
		"ftp://h/m":                   "",
		"nas.lan:/m\nrm -rf /":        "",
		"https:///nohost":             "",
		"https://?x=1":                "",
		"https://[::1]:8080/m":        "http",
		"file://elsewhere/srv/m.gguf": "",
	} {
		kind, local, err := sourceKind(src)
		if (err != nil) != (want == "") || kind != want {
			t.Errorf("%q: %q %v, want %q", src, kind, err, want)
		}
		if kind == "file" && "file://"+local != src {
			t.Errorf("%q: local path %q", src, local)
		}
	}
}

// FuzzSourceKind holds sourceKind to the schema: whatever it admits the
// schema's #Source admits, and a file it names is an absolute, clean path.
func FuzzSourceKind(f *testing.F) {
	for _, s := range []string{"https://h/m", "nas:/m", "file:///m.gguf", "file:/m", "file:///a/../b", "/m", "file://h/m", "https:///x"} {
		f.Add(s)
	}
	spec := schema.Definition("#Source")
	f.Fuzz(func(t *testing.T, src string) {
		kind, local, err := sourceKind(src)
		if err != nil {
			return
		}
		if !spec.MatchesPatterns(src) {
			t.Fatalf("%q admitted as %s, which the schema refuses", src, kind)
		}
		if kind == "file" && (checkPath("file", local) != nil || strings.ContainsAny(local, " '\"$`\\;")) {
			t.Fatalf("%q names the local file %q", src, local)
		}
	})
}

func TestLocalWriteFromCreatesAppendsAndRefusesAWrongOffset(t *testing.T) {
	ctx := context.Background()
	dst := filepath.Join(t.TempDir(), "a", "b", "m.part")
	var sizes []int64
	n, err := Local{}.WriteFrom(ctx, dst, 0, strings.NewReader("hello "), func(size int64) { sizes = append(sizes, size) })
	if err != nil || n != 6 || len(sizes) != 1 || sizes[0] != 6 {
		t.Fatalf("first write: %d %v, progress %v", n, err, sizes)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("created file: %v %v, want mode 0644", fi, err)
	}
	if n, err := (Local{}).WriteFrom(ctx, dst, 6, strings.NewReader("world"), nil); err != nil || n != 5 {
		t.Fatalf("append: %d %v", n, err)
	}
	_, err = Local{}.WriteFrom(ctx, dst, 3, strings.NewReader("x"), nil)
	var oe *sshx.OffsetError
	if !errors.As(err, &oe) || oe.Size != 11 {
		t.Errorf("wrong offset: %v", err)
	}
	if got, _ := os.ReadFile(dst); string(got) != "hello world" {
		t.Errorf("file holds %q", got)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := (Local{}).WriteFrom(cctx, dst, 11, strings.NewReader("x"), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled write: %v", err)
	}
}

// A URL's brackets and braces are its own characters: curl without
// --globoff made ten requests of http://h/q.gguf?x=[1-5]{a,b}.
func TestPrefetchOfAURLWithBracketsMakesOneRequest(t *testing.T) {
	data, sum := weights(t, 1000)
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.RawQuery)
		http.ServeContent(w, r, "m.gguf", time.Time{}, bytes.NewReader(data))
	}))
	defer srv.Close()
	n := NewNode(Local{}, testSettings(t))
	dst := filepath.Join(t.TempDir(), "m.gguf")
	if _, err := n.Prefetch(context.Background(), Model{Path: dst, Source: srv.URL + "/m.gguf?x=[1-5]{a,b}", SHA256: sum, SizeBytes: int64(len(data))}, nil); err != nil {
		t.Fatal(err)
	}
	if len(queries) != 1 || queries[0] != "x=[1-5]{a,b}" {
		t.Errorf("the server got %d requests, queries %q; want one, x=[1-5]{a,b}", len(queries), queries)
	}
}

// A download cut off leaves PATH.part for the next prefetch to resume;
// when the model's path changes meanwhile, nothing would resume it, and it
// stayed forever (90 MB in the battery). The prefetch records each partial
// download in the node's state directory, and the sweep after a prefetch
// removes those of paths the pool no longer has, and nothing else.
func TestAPartialDownloadOfAMovedModelIsRemoved(t *testing.T) {
	ctx := context.Background()
	data, sum := weights(t, 100_000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/cut.gguf") {
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			w.Write(data[:30_000])
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		http.ServeContent(w, r, "m.gguf", time.Time{}, bytes.NewReader(data))
	}))
	defer srv.Close()
	n := NewNode(Local{}, testSettings(t))
	dir := t.TempDir()
	old, moved, foreign := filepath.Join(dir, "old.gguf"), filepath.Join(dir, "new.gguf"), filepath.Join(dir, "other.gguf.part")
	os.WriteFile(foreign, []byte("not poolc's"), 0o644)
	if _, err := n.Prefetch(ctx, Model{Path: old, Source: srv.URL + "/cut.gguf", SHA256: sum, SizeBytes: int64(len(data))}, nil); err == nil {
		t.Fatal("a download cut off succeeded")
	}
	if _, err := os.Stat(old + ".part"); err != nil {
		t.Fatalf("no partial download left to resume: %v", err)
	}
	if _, err := n.Prefetch(ctx, Model{Path: moved, Source: srv.URL + "/m.gguf", SHA256: sum, SizeBytes: int64(len(data))}, nil); err != nil {
		t.Fatal(err)
	}
	removed, err := n.SweepPartials(ctx, []string{moved})
	if err != nil || len(removed) != 1 || removed[0] != old+".part" {
		t.Fatalf("swept %q, %v; want %s", removed, err, old+".part")
	}
	for path, want := range map[string]bool{old + ".part": false, moved: true, foreign: true} {
		if _, err := os.Stat(path); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", path, err == nil, want)
		}
	}
	if removed, err := n.SweepPartials(ctx, []string{moved}); err != nil || len(removed) != 0 {
		t.Errorf("second sweep removed %q, %v", removed, err)
	}
}
