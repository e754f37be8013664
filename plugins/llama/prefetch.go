package llama

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"poolc.dev/poolc/internal/spelling"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/schema"
)

// Model is a weights file to bring to a node: where it goes (Path), where
// it comes from (Source, as the schema's #Source admits: an http or https
// URL the node downloads, a host:/path the node copies with its own SSH
// access, or file:///path, a file on the machine running poolc that the
// host's WriteFrom copies, over SFTP for a node reached over SSH), its
// sha256 (required: a file is never used unverified) and its size when
// known (0 otherwise).
type Model struct {
	Path      string
	Source    string
	SHA256    string
	SizeBytes int64
}

// PresentModel is a weights file found on a node: its size and the sha256
// recorded when poolc prefetched it ("" when it did not, or the file has
// changed size since).
type PresentModel struct {
	Path   string
	Size   int64
	SHA256 string
}

// BytesProgress receives how many bytes of a copy have arrived, of total
// (0 when unknown).
type BytesProgress func(done, total int64)

// PrefetchResult says what a prefetch did: nothing (the file was there
// with the right sha256), or copied Sent bytes, resuming at ResumedAt.
type PrefetchResult struct {
	Skipped   bool
	ResumedAt int64
	Sent      int64
}

// DiskFullError is a prefetch refused because the node lacks the space.
type DiskFullError struct {
	Path       string
	NeedBytes  int64
	FreeBytes  int64
	TotalBytes int64
}

// Error implements error.
func (e *DiskFullError) Error() string {
	return fmt.Sprintf("not enough free disk for %s: %d bytes still to copy (of %d), %d bytes free", e.Path, e.NeedBytes, e.TotalBytes, e.FreeBytes)
}

// DigestError is a copied file whose sha256 is not the model's; the copy
// is deleted.
type DigestError struct {
	Source, Path string
	Got, Want    string
}

// Error implements error.
func (e *DigestError) Error() string {
	return fmt.Sprintf("sha256 of %s is %s, want %s: the copy is deleted and nothing is written at %s", e.Source, e.Got, e.Want, e.Path)
}

var sha256Hex = spelling.New("0-9a-f", "0-9a-f", 64, 64)

// sourceKind classifies a model source: "http" for a URL the node
// downloads, "file" with the local path for a file:///path poolc copies to
// the node, "remote" for a host:/path the node copies from over its own
// SSH (rsync, resuming, or scp). It admits what the schema's #Source
// does, by the schema's own pattern, less what poolc validate refuses
// beyond it (a host spelt like a URL scheme, pools.SchemeHostProblem) and
// a URL in which url.Parse finds no host: a step carries what a validated
// pool names, and nothing else.
func sourceKind(src string) (kind, local string, err error) {
	if !schema.Definition("#Source").MatchesPatterns(src) {
		return "", "", fmt.Errorf("source %q: want an http(s) URL, host:/absolute/path or file:///absolute/path (the schema's #Source)", src)
	}
	if msg := pools.SchemeHostProblem(src); msg != "" {
		return "", "", fmt.Errorf("source %s", msg)
	}
	if p, ok := strings.CutPrefix(src, "file://"); ok {
		return "file", p, nil
	}
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		if u, err := url.Parse(src); err != nil || u.Host == "" {
			return "", "", fmt.Errorf("source %q: not a URL with a host", src)
		}
		return "http", "", nil
	}
	return "remote", "", nil
}

// modelFiles are the weights files of the node: each model brought to
// its path from its source (downloaded by the node, copied from another
// host by the node, or sent by poolc over the host's WriteFrom),
// verified by its sha256 within bounds that grow with its size, and the
// partial downloads left behind.
type modelFiles struct {
	*session
}

// modelProbe is what scriptProbe reports of a model path.
type modelProbe struct {
	Size   int64  // -1 when absent
	Cache  string // "HEX SIZE" recorded at the last prefetch, or ""
	Part   int64  // size of the partial download, -1 when absent
	FreeKB int64
}

// cachedSHA is the recorded digest when it was recorded for this size.
func (p modelProbe) cachedSHA() string {
	f := strings.Fields(p.Cache)
	if len(f) == 2 && sha256Hex.Allows(f[0]) && f[1] == strconv.FormatInt(p.Size, 10) {
		return f[0]
	}
	return ""
}

func parseProbe(out string) (modelProbe, error) {
	p := modelProbe{Size: -1, Part: -1}
	seen := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), "\t")
		var dst *int64
		switch key {
		case "have":
			dst = &p.Size
		case "part":
			dst = &p.Part
		case "free":
			dst = &p.FreeKB
		case "cache":
			p.Cache = val
			seen++
			continue
		default:
			return p, fmt.Errorf("model probe: unexpected %q", sc.Text())
		}
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil || n < -1 {
			return p, fmt.Errorf("model probe: %s %q", key, val)
		}
		*dst = n
		seen++
	}
	if seen != 4 {
		return p, fmt.Errorf("model probe: incomplete answer %q", out)
	}
	return p, nil
}

// probeModel looks at path on the node: its size, the digest recorded
// beside it, its partial download and the free disk.
func (mf *modelFiles) probeModel(ctx context.Context, path string) (modelProbe, error) {
	out, err := mf.run(ctx, scriptProbe, path, path+".part")
	if err != nil {
		return modelProbe{}, fmt.Errorf("looking at %s on %s: %w", path, mf.host, err)
	}
	return parseProbe(out)
}

// sha256 hashes the file at path, of size bytes, within the settings'
// checksumTimeout of that size.
func (mf *modelFiles) sha256(ctx context.Context, path string, size int64) (string, error) {
	out, err := mf.runFor(ctx, mf.set.checksumTimeout(size), scriptSHA256, path)
	if err != nil {
		return "", fmt.Errorf("sha256 of %s on %s: %w", path, mf.host, err)
	}
	f := strings.Fields(out)
	if len(f) == 0 || !sha256Hex.Allows(f[0]) {
		return "", fmt.Errorf("sha256 of %s on %s: unexpected answer %q", path, mf.host, out)
	}
	return f[0], nil
}

// prefetch carries out Node.Prefetch.
func (mf *modelFiles) prefetch(ctx context.Context, m Model, progress BytesProgress) (PrefetchResult, error) {
	var res PrefetchResult
	if err := checkPath("model path", m.Path); err != nil {
		return res, err
	}
	want := strings.ToLower(m.SHA256)
	if !sha256Hex.Allows(want) {
		return res, fmt.Errorf("model %s: sha256 %q is not 64 hex digits; prefetch verifies every file", m.Path, m.SHA256)
	}
	kind, local, err := sourceKind(m.Source)
	if err != nil {
		return res, fmt.Errorf("model %s: %w", m.Path, err)
	}
	total := m.SizeBytes
	var src *os.File
	if kind == "file" {
		if src, err = os.Open(local); err != nil {
			return res, fmt.Errorf("model %s: %w", m.Path, err)
		}
		defer src.Close()
		fi, err := src.Stat()
		if err != nil {
			return res, err
		}
		total = fi.Size()
	}
	pr, err := mf.probeModel(ctx, m.Path)
	if err != nil {
		return res, err
	}
	if pr.Size >= 0 {
		have := pr.cachedSHA()
		if have == "" {
			if have, err = mf.sha256(ctx, m.Path, pr.Size); err != nil {
				return res, err
			}
		}
		if have == want {
			res.Skipped = true
			if progress != nil {
				progress(pr.Size, pr.Size)
			}
			return res, mf.commitDigest(ctx, m.Path, want, pr.Size)
		}
	}
	part := m.Path + ".part"
	if pr.Part > 0 && total > 0 && pr.Part > total {
		if _, err := mf.run(ctx, scriptRemove, part); err != nil {
			return res, err
		}
		pr.Part = -1
	}
	if pr.Part > 0 {
		res.ResumedAt = pr.Part
	}
	if need := total - res.ResumedAt; total > 0 && need > pr.FreeKB<<10 {
		return res, &DiskFullError{Path: m.Path, NeedBytes: need, FreeBytes: pr.FreeKB << 10, TotalBytes: total}
	}
	if progress != nil {
		progress(res.ResumedAt, total)
	}
	if _, err := mf.run(ctx, scriptRecordPartial, mf.partials(), part); err != nil {
		return res, err
	}
	switch {
	case kind == "file":
		if _, err := src.Seek(res.ResumedAt, io.SeekStart); err != nil {
			return res, err
		}
		var grew func(int64)
		if progress != nil {
			grew = func(size int64) { progress(size, total) }
		}
		// The copy is bounded as a transfer by the node is.
		bound := mf.set.transferTimeout(total - res.ResumedAt)
		cctx, cancel := context.WithTimeout(ctx, bound)
		res.Sent, err = mf.host.WriteFrom(cctx, part, res.ResumedAt, src, grew)
		timedOut := ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded)
		cancel()
		if timedOut {
			err = fmt.Errorf("did not finish within %s (transfer_mib_per_second)", bound.Round(time.Millisecond))
		}
		if err != nil {
			return res, fmt.Errorf("copying %s to %s on %s: %w", local, part, mf.host, err)
		}
	case total > 0 && res.ResumedAt == total:
		// A complete download awaiting its check: a Range request past
		// the end would be refused.
	default:
		script := scriptDownload
		if kind == "remote" {
			script = scriptRemoteCopy
		}
		if _, err := mf.runFor(ctx, mf.set.transferTimeout(total-res.ResumedAt), script, part, m.Source); err != nil {
			return res, fmt.Errorf("downloading %s to %s on %s: %w", m.Source, part, mf.host, err)
		}
		after, err := mf.probeModel(ctx, m.Path)
		if err != nil {
			return res, err
		}
		res.Sent = after.Part - res.ResumedAt
		if progress != nil {
			progress(after.Part, total)
		}
	}
	got, err := mf.sha256(ctx, part, res.ResumedAt+res.Sent)
	if err != nil {
		return res, err
	}
	if got != want {
		mf.run(ctx, scriptRemove, part)
		return res, &DigestError{Source: m.Source, Path: m.Path, Got: got, Want: want}
	}
	size := res.ResumedAt + res.Sent
	if _, err := mf.run(ctx, scriptCommit, part, m.Path, want, strconv.FormatInt(size, 10)); err != nil {
		return res, fmt.Errorf("renaming %s to %s on %s: %w", part, m.Path, mf.host, err)
	}
	return res, nil
}

// partials is the ledger of the partial downloads prefetches began on the
// node, in its state directory.
func (mf *modelFiles) partials() string { return path.Join(mf.set.StateDir, "partials") }

// sweepPartials carries out Node.SweepPartials.
func (mf *modelFiles) sweepPartials(ctx context.Context, keep []string) ([]string, error) {
	args := []string{mf.partials()}
	for _, k := range keep {
		args = append(args, k+".part")
	}
	out, err := mf.run(ctx, scriptSweepPartials, args...)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if p, ok := strings.CutPrefix(line, "removed "); ok {
			removed = append(removed, p)
		}
	}
	return removed, nil
}

// commitDigest records the digest of a file found already in place, so
// the next observe need not hash it again.
func (mf *modelFiles) commitDigest(ctx context.Context, path, sum string, size int64) error {
	_, err := mf.exec(ctx, mf.set.CommandTimeout, shArgv(`cat > "$1.sha256"`, path), strings.NewReader(sum+" "+strconv.FormatInt(size, 10)+"\n"))
	return err
}
