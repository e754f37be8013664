package imagesync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"poolc.dev/poolc/internal/spelling"
	"poolc.dev/poolc/internal/sshx"
)

func TestParseSource(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Source
		err  string
	}{
		{in: "oci:./build/oci", want: Source{Kind: SourceOCILayout, Path: "./build/oci"}},
		{in: "oci:/tmp/a:b#harness", want: Source{Kind: SourceOCILayout, Path: "/tmp/a:b", Ref: "harness"}},
		{in: "docker-archive:harness.tar", want: Source{Kind: SourceDockerArchive, Path: "harness.tar"}},
		{in: "docker-archive:harness.tar#elanous-harness:build-7", want: Source{Kind: SourceDockerArchive, Path: "harness.tar", Ref: "elanous-harness:build-7"}},
		{in: "registry:127.0.0.1:5000/ci/harness:build-7", want: Source{Kind: SourceRegistry, Ref: "127.0.0.1:5000/ci/harness:build-7"}},
		{in: "registry:127.0.0.1:5000/h@sha256:" + strings.Repeat("a", 64), want: Source{Kind: SourceRegistry, Ref: "127.0.0.1:5000/h@sha256:" + strings.Repeat("a", 64)}},
		{in: "./build/oci", err: "want"},
		{in: "http://x/y", err: "unknown kind"},
		{in: "oci:", err: "empty path"},
		{in: "oci:#x", err: "empty path"},
		{in: "registry:", err: "empty reference"},
		{in: "registry:UPPER/Case", err: "could not parse"},
		{in: "docker-archive:a.tar#Not A Tag", err: "docker-archive"},
		{in: "oci:a\nb", err: "control"},
	} {
		got, err := ParseSource(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSource(%q) = %+v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSource(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if back, err := ParseSource(got.String()); err != nil || back != got {
			t.Errorf("round trip of %q: %+v, %v", tc.in, back, err)
		}
	}
}

func FuzzParseSource(f *testing.F) {
	for _, s := range []string{"oci:./a#b", "docker-archive:a.tar#r:t", "registry:h:5000/r@sha256:" + strings.Repeat("0", 64), "x", "oci:", "registry:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		src, err := ParseSource(s)
		if err != nil {
			return
		}
		back, err := ParseSource(src.String())
		if err != nil || back != src {
			t.Fatalf("%q parsed to %+v, which prints as %q and reads back as %+v, %v", s, src, src.String(), back, err)
		}
	})
}

func TestImmutableTag(t *testing.T) {
	art := artifactOf(t, imageOf(t, layers(t, 1, 1024), nil))
	if tag, err := ImmutableTag("", art.Digest); err != nil || tag != "sha256-"+art.Digest.Hex || !spelling.New("A-Za-z0-9_", "A-Za-z0-9._-", 1, 128).Allows(tag) /* a registry tag */ {
		t.Errorf("content tag %q, %v", tag, err)
	}
	if tag, err := ImmutableTag("git-0a1b2c3", art.Digest); err != nil || tag != "git-0a1b2c3-"+art.Digest.Hex[:12] {
		t.Errorf("build tag %q, %v", tag, err)
	}
	for _, bad := range []string{"-x", ".x", "a b", "a/b", strings.Repeat("a", 65)} {
		if tag, err := ImmutableTag(bad, art.Digest); err == nil {
			t.Errorf("build %q gave tag %q", bad, tag)
		}
	}
}

func TestRetryable(t *testing.T) {
	cut := &sshx.ConnError{Err: io.ErrUnexpectedEOF}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("member a: blob x: %w", cut), true},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{fmt.Errorf("put: %w", io.ErrUnexpectedEOF), true},
		{&transport.Error{StatusCode: 503}, true},
		{&transport.Error{StatusCode: 429}, true},
		{context.DeadlineExceeded, true},
		{&transport.Error{StatusCode: 400}, false},
		{&sshx.ConnError{Err: &sshx.HostKeyError{Host: "h:22"}}, false},
		{&sshx.ConnError{Err: fmt.Errorf("%w: x", sshx.ErrAuth)}, false},
		{fmt.Errorf("m: %w", &VerifyError{}), false},
		{&TagConflictError{}, false},
		{&PinError{}, false},
		{context.Canceled, false},
		{errors.New("manifest invalid"), false},
	} {
		if got := Retryable(tc.err); got != tc.want {
			t.Errorf("Retryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
