package memest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
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
	// OnNode reads the model's file where a node holds it (its prefetched
	// copy), for a source poolc cannot read itself (host:/path, or none);
	// nil when no node is known to hold it.
	OnNode NodeFile
}

// NodeFile reads at most max bytes from the start of a model's file on a
// node, and the file's size, within ctx's deadline.
type NodeFile func(ctx context.Context, max int64) (head []byte, size int64, err error)

// MaxNodeHeader bounds what is read of a model's file from a node: a GGUF
// header (metadata, vocabulary, tensor index) of the models llama.cpp
// serves is a few MiB; the weights after it are never read.
const MaxNodeHeader = 32 << 20

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
	if key == "" {
		return e.read(ctx, m) // nothing names the file's content: no cache
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
		if f, err = e.read(ctx, m); err != nil {
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

// read parses the header at the model's source, or in its copy on a node,
// within the timeout.
func (e *Estimator) read(ctx context.Context, m Model) (*gguf.GGUFFile, error) {
	source := m.Source
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
	case m.OnNode != nil:
		return readNode(ctx, timeout, m.OnNode)
	}
	return nil, ErrNoReadableSource
}

// readNode parses the header of a model's file on a node: its first
// MaxNodeHeader bytes, read there, are laid in a sparse local file of the
// file's size (the parser takes the weights' size from it), which is
// parsed and removed.
func readNode(ctx context.Context, timeout time.Duration, read NodeFile) (*gguf.GGUFFile, error) {
	head, size, err := read(ctx, MaxNodeHeader)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp("", "poolc-gguf-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(head)
	if err == nil && size > int64(len(head)) {
		err = tmp.Truncate(size)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	f, err := parse(ctx, timeout, func() (*gguf.GGUFFile, error) { return gguf.ParseGGUFFile(tmp.Name()) })
	if err != nil && len(head) >= MaxNodeHeader {
		return nil, fmt.Errorf("%w (poolc reads the first %d MiB of a file on a node, and this header may be longer)", err, MaxNodeHeader>>20)
	}
	return f, err
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
