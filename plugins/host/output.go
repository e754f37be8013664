package host

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"poolc.dev/poolc/internal/redact"
)

// output is where the plugins' output goes: whole lines, each prefixed
// with its plugin's name, never two plugins' lines mixed.
type output struct {
	mu      sync.Mutex
	w       io.Writer // nil discards
	writers []*lineWriter
	// redactors mask each plugin's credentials in its lines (redactLines).
	redactors map[string]*redact.Redactor
}

// writer returns a writer for one stream of plugin name. raw is the
// process's own stderr, where go-plugin logs as JSON lines: those are
// dropped, except errors.
func (o *output) writer(name string, raw bool) io.Writer {
	o.mu.Lock()
	defer o.mu.Unlock()
	lw := &lineWriter{out: o, name: name, prefix: name + ": ", raw: raw}
	o.writers = append(o.writers, lw)
	return lw
}

// flush writes what is left of unfinished lines.
func (o *output) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, lw := range o.writers {
		if len(lw.buf) > 0 {
			lw.emit(lw.buf)
			lw.buf = nil
		}
	}
}

// lineWriter cuts one stream into lines.
type lineWriter struct {
	out    *output
	name   string
	prefix string
	raw    bool
	buf    []byte
}

// maxLine is where a line without an end is cut, so a plugin that never
// writes a newline cannot grow poolc's memory.
const maxLine = 64 << 10

// Write emits each whole line of p, keeping the rest for the next write.
func (lw *lineWriter) Write(p []byte) (int, error) {
	lw.out.mu.Lock()
	defer lw.out.mu.Unlock()
	lw.buf = append(lw.buf, p...)
	for {
		i := bytes.IndexByte(lw.buf, '\n')
		if i < 0 {
			if len(lw.buf) >= maxLine {
				lw.emit(lw.buf)
				lw.buf = lw.buf[:0]
			}
			return len(p), nil
		}
		lw.emit(lw.buf[:i])
		lw.buf = lw.buf[i+1:]
	}
}

// emit writes one line; the caller holds out.mu.
func (lw *lineWriter) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if lw.out.w == nil {
		return
	}
	if lw.raw {
		var entry struct {
			Level   string `json:"@level"`
			Message string `json:"@message"`
			Error   string `json:"error"`
		}
		if json.Unmarshal(line, &entry) == nil && entry.Level != "" {
			if entry.Level != "error" {
				return
			}
			line = []byte("go-plugin: " + entry.Message)
			if entry.Error != "" {
				line = append(line, ": "+entry.Error...)
			}
		}
	}
	var b bytes.Buffer
	b.WriteString(lw.prefix)
	b.WriteString(lw.out.redactors[lw.name].String(string(line)))
	b.WriteByte('\n')
	_, _ = lw.out.w.Write(b.Bytes())
}
