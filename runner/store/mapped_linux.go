package store

import (
	"fmt"
	"os"
	"syscall"
)

// mappedChunk is how much the journal file grows at a time. A process
// killed while it holds the file leaves at most this many NUL bytes
// after its last record, as one unreadable line that a scan skips (well
// within the scanner's 16 MiB) and settle cuts off.
const mappedChunk = 4 << 20

// mappedLog appends to a file through a shared memory mapping of it: a
// record copied into the mapping is in the OS's page cache at once, as
// after a write call, so a kill of the process loses none of it, and
// appending costs no system call. The file grows a chunk at a time, its
// blocks allocated first (fallocate), so that a full disk is an error of
// the append that grows it rather than a fault when a page is written.
type mappedLog struct {
	fh  *os.File
	m   []byte // the mapping: the whole file
	off int    // bytes appended; the rest of m is NUL
}

// mapLog maps fh, which holds size bytes of records, for appending; nil
// when the file cannot be mapped or its blocks allocated (a file system
// without fallocate), and the caller writes instead.
func mapLog(fh *os.File, size int64) *mappedLog {
	l := &mappedLog{fh: fh, off: int(size)}
	if l.grow(0) != nil {
		return nil
	}
	return l
}

// grow makes room for n more bytes, a chunk at a time.
func (l *mappedLog) grow(n int) error {
	if l.m != nil && l.off+n <= len(l.m) {
		return nil
	}
	size := (l.off + n + mappedChunk) / mappedChunk * mappedChunk
	if err := syscall.Fallocate(int(l.fh.Fd()), 0, 0, int64(size)); err != nil {
		return fmt.Errorf("growing the journal: %w", err)
	}
	m, err := syscall.Mmap(int(l.fh.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping the journal: %w", err)
	}
	if l.m != nil {
		syscall.Munmap(l.m)
	}
	l.m = m
	return nil
}

// append copies p after the records appended before.
func (l *mappedLog) append(p []byte) error {
	if err := l.grow(len(p)); err != nil {
		return err
	}
	l.off += copy(l.m[l.off:], p)
	return nil
}

// close unmaps the file and cuts it to the records appended.
func (l *mappedLog) close() error {
	err := syscall.Munmap(l.m)
	l.m = nil
	if terr := l.fh.Truncate(int64(l.off)); err == nil {
		err = terr
	}
	return err
}
