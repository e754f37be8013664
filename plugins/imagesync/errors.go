package imagesync

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"poolc.dev/poolc/internal/sshx"
)

// VerifyError is a pushed image the registry does not serve back as
// pushed: the digest read back under Ref differs from Want (Got), or
// nothing is served. A sync that meets it fails and tags nothing.
type VerifyError struct {
	Member string
	Ref    string
	Want   string
	Got    string
	What   string
}

// Error implements error.
func (e *VerifyError) Error() string {
	msg := "verify " + e.Ref + ": " + e.What + ": want " + e.Want
	if e.Got != "" {
		msg += ", got " + e.Got
	}
	return msg
}

// TagConflictError is an immutable tag that already names another image:
// the sync refuses to move it.
type TagConflictError struct {
	Member     string
	Repository string
	Tag        string
	Want       string
	Have       string
}

// Error implements error.
func (e *TagConflictError) Error() string {
	return "tag " + e.Repository + ":" + e.Tag + " already names " + e.Have + ", not " + e.Want + "; tags are immutable, refusing to move it"
}

// SourceError is a pool's image source that could not be read: the
// member's registry was asked nothing, or answered, so the member is not
// unobserved; what a sync would send it is what is unknown.
type SourceError struct{ Err error }

// Error implements error.
func (e *SourceError) Error() string { return "the image source cannot be read: " + e.Err.Error() }

// Unwrap returns the reading's error.
func (e *SourceError) Unwrap() error { return e.Err }

// PinError is a source whose image is not the digest the pool pins.
type PinError struct {
	Want string
	Got  string
}

// Error implements error.
func (e *PinError) Error() string {
	return "the source image is " + e.Got + " but the pool pins " + e.Want
}

// Retryable reports whether a sync that failed with err may pass when
// tried again: the connection, the tunnel or the registry failed (cut,
// refused, timed out, 5xx, 429). A refused host key, a verification
// failure, a tag conflict, a wrong pin, a 4xx and a cancellation are not.
func Retryable(err error) bool {
	var (
		hke  *sshx.HostKeyError
		ve   *VerifyError
		tce  *TagConflictError
		pe   *PinError
		terr *transport.Error
		ne   net.Error
	)
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.As(err, &hke), errors.Is(err, sshx.ErrAuth),
		errors.As(err, &ve), errors.As(err, &tce), errors.As(err, &pe):
		return false
	case errors.As(err, &terr):
		return terr.StatusCode >= 500 || terr.StatusCode == http.StatusTooManyRequests
	case sshx.Retryable(err), errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}
