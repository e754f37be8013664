package sshx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// FileMode is the mode of a file WriteFrom creates.
const FileMode fs.FileMode = 0o644

// chunk is the most WriteFrom sends in one write request, and so how often
// it reports progress: sftp's default packet size, which every server
// accepts.
const chunk = 32 << 10

// WriteFrom makes the remote file at the absolute path p hold its first
// offset bytes (which must be there already: the file's size must be
// offset) followed by everything r yields, through an SFTP session on the
// pool's connection (the server must offer the "sftp" subsystem, as
// OpenSSH does by default). The file is created with mode FileMode and
// its directory with its parents when missing. Writes go one at a time,
// each acknowledged before the next is sent, so that a copy cut at any
// point leaves a file that is a whole prefix of the data, which the next
// call resumes from its size. progress, when not nil, receives the file's
// size after each acknowledged write. WriteFrom returns the bytes written;
// a cancelled ctx closes the session and returns ctx's error.
func (c *Client) WriteFrom(ctx context.Context, p string, offset int64, r io.Reader, progress func(size int64)) (int64, error) {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return 0, fmt.Errorf("sshx: remote path %q is not absolute and clean", p)
	}
	var sess *ssh.Session
	err := c.pool.do(ctx, c.ep, func(cl *ssh.Client) error {
		s, err := cl.NewSession()
		sess = s
		return err
	})
	if err != nil {
		return 0, c.connErr(err)
	}
	defer sess.Close()
	sc, err := startSFTP(sess)
	if errors.Is(err, io.EOF) {
		return 0, c.connErr(err)
	} else if err != nil {
		return 0, fmt.Errorf("ssh %s: %w", c.ep, err)
	}
	defer sc.Close()
	stop := context.AfterFunc(ctx, func() { sc.Close() })
	defer stop()
	rr := &recordingReader{r: r}
	n, err := writeFrom(ctx, sc, p, offset, rr, progress)
	var se *sftp.StatusError
	var oe *OffsetError
	switch {
	case ctx.Err() != nil:
		return n, ctx.Err()
	case rr.err != nil && err == rr.err:
		return n, err
	case err == nil || errors.As(err, &se) || errors.As(err, &oe) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission):
		// The server's answer (or success): the operation's own result.
		return n, err
	}
	// The session went away under the copy: the connection's failure.
	return n, c.connErr(err)
}

// startSFTP starts the sftp subsystem on sess. The subsystem is requested
// outside the pool's do: a server that offers none has answered, and its
// connection is fine (io.EOF, on the other hand, is a connection that
// ended).
func startSFTP(sess *ssh.Session) (*sftp.Client, error) {
	w, err := sess.StdinPipe()
	if err != nil {
		return nil, err
	}
	rd, err := sess.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := sess.RequestSubsystem("sftp"); errors.Is(err, io.EOF) {
		return nil, err
	} else if err != nil {
		return nil, fmt.Errorf("the server offers no sftp subsystem: %w", err)
	}
	return sftp.NewClientPipe(rd, w)
}

// OffsetError is a WriteFrom whose file does not hold the offset bytes the
// copy was to resume after.
type OffsetError struct {
	Path   string
	Size   int64
	Offset int64
}

// Error implements error.
func (e *OffsetError) Error() string {
	return fmt.Sprintf("%s holds %d bytes, but the copy was to resume after %d", e.Path, e.Size, e.Offset)
}

// recordingReader keeps the error its reader returned, to tell a failure
// to read the data from a failure to write it.
type recordingReader struct {
	r   io.Reader
	err error
}

func (rr *recordingReader) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	if err != nil && err != io.EOF {
		rr.err = err
	}
	return n, err
}

func writeFrom(ctx context.Context, sc *sftp.Client, p string, offset int64, r io.Reader, progress func(int64)) (int64, error) {
	if err := sc.MkdirAll(path.Dir(p)); err != nil {
		return 0, fmt.Errorf("creating the directory of %s: %w", p, err)
	}
	f, err := sc.OpenFile(p, os.O_WRONLY|os.O_CREATE)
	if err != nil {
		return 0, fmt.Errorf("opening %s: %w", p, err)
	}
	defer f.Close()
	return AppendTo(ctx, f, p, offset, r, progress)
}

// AppendFile is a file AppendTo writes: an *os.File or an *sftp.File.
type AppendFile interface {
	io.WriteSeeker
	io.Closer
	Stat() (fs.FileInfo, error)
	Chmod(fs.FileMode) error
}

// AppendTo makes the open file f (named p in messages) hold what r yields
// after its first offset bytes, which must be all it holds (else an
// *OffsetError), with mode FileMode, in the writes of copyChunks, and
// closes it. It returns the bytes written.
func AppendTo(ctx context.Context, f AppendFile, p string, offset int64, r io.Reader, progress func(int64)) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", p, err)
	}
	if fi.Size() != offset {
		return 0, &OffsetError{Path: p, Size: fi.Size(), Offset: offset}
	}
	if err := f.Chmod(FileMode); err != nil {
		return 0, fmt.Errorf("chmod %s: %w", p, err)
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, err
	}
	n, err := copyChunks(ctx, f, r, offset, progress)
	if err != nil {
		return n, err
	}
	return n, f.Close()
}

// copyChunks copies r to w in writes of at most 32 KiB, the next read only
// after the last write returned, and reports start plus the bytes written
// so far to progress (when not nil) after each write. It stops with ctx's
// error, before the next read, once ctx is done. It returns the bytes
// written.
func copyChunks(ctx context.Context, w io.Writer, r io.Reader, start int64, progress func(int64)) (int64, error) {
	buf := make([]byte, chunk)
	var done int64
	for {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		n, rerr := r.Read(buf)
		if n > 0 {
			m, err := w.Write(buf[:n])
			done += int64(m)
			if err != nil {
				return done, err
			}
			if progress != nil {
				progress(start + done)
			}
		}
		switch {
		case rerr == io.EOF:
			return done, nil
		case rerr != nil:
			return done, rerr
		}
	}
}
