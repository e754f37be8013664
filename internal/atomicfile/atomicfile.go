// Package atomicfile replaces files so that a reader, or a crash at any
// point, sees either the old content or the new, never a mix.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tempPrefix is how the temporary file of path starts: hidden, beside
// path, so that the rename stays in one file system.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

// Write replaces path with data: it writes a temporary file in the same
// directory, syncs it, renames it over path and syncs the directory. A new
// file gets perm less the process's umask, as os.OpenFile gives it; a file
// that exists keeps its mode.
func Write(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	keep, statErr := os.Stat(path)
	b := make([]byte, 8)
	rand.Read(b)
	name := filepath.Join(dir, tempPrefix(path)+hex.EncodeToString(b))
	tmp, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if statErr == nil {
		if err = tmp.Chmod(keep.Mode().Perm()); err != nil {
			return err
		}
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(name, path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Clean removes the temporary files that writes of path left when they
// were killed before their rename. Only a process that is the one writer
// of path (it holds the lock that guards path) may call it, since it also
// removes a write in progress.
func Clean(path string) error {
	ents, err := os.ReadDir(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	prefix := tempPrefix(path)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
			if rerr := os.Remove(filepath.Join(filepath.Dir(path), e.Name())); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = errors.Join(err, rerr)
			}
		}
	}
	return err
}
