// Package syncbuf is a bytes.Buffer that one goroutine may write while
// another reads it: the output of a process or server under test.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer collects writes under a lock; the zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
