package sshx

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// DefaultMaxOutput bounds what Run keeps of a command's standard output,
// and of its standard error, when Config.MaxOutput is 0.
const DefaultMaxOutput = 16 << 20

// killTimeout bounds the command that kills a cancelled command's
// process group on the remote host.
const killTimeout = 10 * time.Second

// OutputLimitError is a command that wrote more than the bound on what
// is read back; it was killed.
type OutputLimitError struct {
	Argv  []string
	Limit int64
}

// Error implements error.
func (e *OutputLimitError) Error() string {
	return fmt.Sprintf("%s wrote more than %d bytes, the bound on what poolc reads back: killed", CommandName(e.Argv), e.Limit)
}

// CommandName is argv shortened for a message: the program and, for
// `sh -c PROGRAM ...`, the start of the program and its arguments.
func CommandName(argv []string) string {
	if len(argv) == 0 {
		return "empty command"
	}
	if len(argv) < 3 || argv[0] != "sh" || argv[1] != "-c" {
		return fmt.Sprintf("%q", strings.Join(argv, " "))
	}
	prog := strings.Join(strings.Fields(argv[2]), " ")
	const max = 60
	if len(prog) > max {
		prog = prog[:max] + "..."
	}
	name := fmt.Sprintf("sh -c %q", prog)
	if len(argv) > 4 {
		name += " " + strings.Join(argv[4:], " ")
	}
	return name
}

// LimitedBuffer collects what is written up to Max bytes; the first write
// past it calls Over and fails, as every later one does.
type LimitedBuffer struct {
	Max  int64
	Over func()

	mu   sync.Mutex
	buf  bytes.Buffer
	full bool
}

// Write implements io.Writer.
func (b *LimitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.full || int64(b.buf.Len()+len(p)) > b.Max {
		if !b.full && b.Over != nil {
			b.Over()
		}
		b.full = true
		return 0, fmt.Errorf("output passed %d bytes", b.Max)
	}
	return b.buf.Write(p)
}

// Bytes returns what was collected.
func (b *LimitedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}

// pgidMarker starts the line on which a remote command reports its
// process group.
const pgidMarker = "poolc-pgid "

// groupPrefix precedes every remote command. sshd runs a command through
// the login shell in a session of its own (setsid), so the shell's pid is
// the command's process group: it reports it on stderr, then execs the
// command in its place. A cancelled command's group is killed by it.
const groupPrefix = `printf '` + pgidMarker + `%s\n' "$$" >&2; exec `

// pgidWriter passes a command's stderr on to w, less the line
// groupPrefix prints, whose process group it keeps.
type pgidWriter struct {
	w    io.Writer
	mu   sync.Mutex
	head []byte
	done bool
	pgid int
}

// Write implements io.Writer.
func (p *pgidWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return p.pass(b, len(b))
	}
	// The marker comes first, unless the login shell's startup files
	// print something before it: look for it in the first 4 KiB.
	p.head = append(p.head, b...)
	i := bytes.Index(p.head, []byte(pgidMarker))
	end := -1
	if i >= 0 {
		end = bytes.IndexByte(p.head[i:], '\n')
	}
	switch {
	case end >= 0:
		p.pgid, _ = strconv.Atoi(string(p.head[i+len(pgidMarker) : i+end]))
		rest := append(p.head[:i:i], p.head[i+end+1:]...)
		p.done, p.head = true, nil
		return p.pass(rest, len(b))
	case len(p.head) > 4096:
		rest := p.head
		p.done, p.head = true, nil
		return p.pass(rest, len(b))
	}
	return len(b), nil
}

func (p *pgidWriter) pass(b []byte, n int) (int, error) {
	if len(b) == 0 {
		return n, nil
	}
	if _, err := p.w.Write(b); err != nil {
		return 0, err
	}
	return n, nil
}

// group is the process group the command reported, 0 before it did.
func (p *pgidWriter) group() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pgid
}

// flush passes on what is held back when the command ended before the
// marker was complete.
func (p *pgidWriter) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done && len(p.head) > 0 {
		p.w.Write(p.head)
	}
	p.done, p.head = true, nil
}

// killGroup kills process group pgid on the remote host, through a
// session of its own, within killTimeout; best effort (the host may be
// the reason the command was cancelled).
func (c *Client) killGroup(pgid int) {
	if pgid <= 1 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	done := make(chan struct{})
	var sess *ssh.Session
	go func() {
		defer close(done)
		c.pool.do(ctx, c.ep, func(cl *ssh.Client) error {
			s, err := cl.NewSession()
			if err != nil {
				return err
			}
			sess = s
			return s.Run("kill -s KILL -- -" + strconv.Itoa(pgid) + " 2>/dev/null")
		})
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	if sess != nil {
		sess.Close()
	}
}
