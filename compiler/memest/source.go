package memest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	gguf "github.com/gpustack/gguf-parser-go"
)

// DefaultTimeout bounds reading one model's header, local or remote.
const DefaultTimeout = 30 * time.Second

// ErrNoReadableSource says a model's source is not one poolc can read a
// header from: it has none, or it is host:/path, which only the node
// reaches.
var ErrNoReadableSource = errors.New("no file:// or http(s) source to read the GGUF header from")

// Model is what the estimator needs of a model: where its file is, its
// digest (the cache key when set) and its llama-server arguments.
type Model struct {
	Source string
	SHA256 string
	Args   []string
}

// Estimator reads GGUF headers and estimates from them. Headers are cached
// for the Estimator's life, by digest; an Estimator is safe for
// concurrent use. The zero value is ready, with DefaultTimeout.
type Estimator struct {
	// Timeout bounds reading one header; 0 means DefaultTimeout.
	Timeout time.Duration
	// CacheDir, when set, keeps the parsed headers of remote models that
	// declare a sha256 on disk, keyed by that digest: a digest names one
	// file's content, so such an entry never goes stale, and the next
	// run reads nothing over the network.
	CacheDir string

	mu      sync.Mutex
	headers map[string]*gguf.GGUFFile
}

// Estimate reads the model's header (or takes it from the cache) and
// estimates its resident memory for its arguments.
func (e *Estimator) Estimate(ctx context.Context, m Model) (Estimate, error) {
	a, err := ParseArgs(m.Args)
	if err != nil {
		return Estimate{}, fmt.Errorf("args: %w", err)
	}
	f, err := e.header(ctx, m)
	if err != nil {
		return Estimate{}, err
	}
	return safeEstimate(f, a)
}

// safeEstimate is FromFile, with a panic in the parser's arithmetic (a
// header it does not expect) turned into an error.
func safeEstimate(f *gguf.GGUFFile, a Args) (est Estimate, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the estimator cannot price this GGUF header: %v", r)
		}
	}()
	return FromFile(f, a), nil
}

// header returns the parsed header of the model's file.
func (e *Estimator) header(ctx context.Context, m Model) (*gguf.GGUFFile, error) {
	key := m.SHA256
	if key == "" {
		key = m.Source
	}
	e.mu.Lock()
	f, ok := e.headers[key]
	e.mu.Unlock()
	if ok {
		return f, nil
	}
	disk := gguf.GGUFFileCache("")
	if e.CacheDir != "" && m.SHA256 != "" && remote(m.Source) {
		disk = gguf.GGUFFileCache(e.CacheDir)
	}
	f, err := disk.Get(m.SHA256, 0)
	if err != nil {
		if f, err = e.read(ctx, m.Source); err != nil {
			return nil, err
		}
		_ = disk.Put(m.SHA256, f) // a cache that cannot be written is only slower
	}
	e.mu.Lock()
	if e.headers == nil {
		e.headers = map[string]*gguf.GGUFFile{}
	}
	e.headers[key] = f
	e.mu.Unlock()
	return f, nil
}

// read parses the header at source, within the timeout.
func (e *Estimator) read(ctx context.Context, source string) (*gguf.GGUFFile, error) {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case strings.HasPrefix(source, "file://"):
		path := strings.TrimPrefix(source, "file://")
		return parse(ctx, timeout, func() (*gguf.GGUFFile, error) { return gguf.ParseGGUFFile(path) })
	case remote(source):
		f, err := parse(ctx, timeout, func() (*gguf.GGUFFile, error) {
			return gguf.ParseGGUFFileRemote(ctx, source, gguf.SkipCache(), gguf.UseBufferSize(bufferSize))
		})
		if err != nil {
			return nil, fmt.Errorf("reading the GGUF header at %s: %w", redactURL(source), unwrapURL(err))
		}
		return f, nil
	}
	return nil, ErrNoReadableSource
}

// remote reports whether the source is an http(s) URL.
func remote(source string) bool {
	return strings.HasPrefix(source, "http://") || strings.HasPrefix(source, "https://")
}

// bufferSize is the size of each range request: the header of a model
// with a large vocabulary takes a few of them.
const bufferSize = 1 << 20

// parse runs a parse that may not watch the context (a local file read)
// and gives up waiting for it when the context ends.
func parse(ctx context.Context, timeout time.Duration, f func() (*gguf.GGUFFile, error)) (*gguf.GGUFFile, error) {
	type result struct {
		f   *gguf.GGUFFile
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{nil, fmt.Errorf("the parser failed: %v", r)}
			}
		}()
		f, err := f()
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("not a GGUF header poolc can read: %w", r.err)
		}
		return r.f, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("reading the GGUF header took longer than %s: %w", timeout, ctx.Err())
	}
}

// redactURL drops a URL's user information and query, which may carry
// credentials.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "the model's URL"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// unwrapURL drops the *url.Error wrapper, which repeats the URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
