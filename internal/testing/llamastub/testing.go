package llamastub

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// The environment variables that make the llama suites run a real
// llama-server instead of the stand-in.
const (
	// EnvServer names a llama-server binary (a build of llama.cpp) the
	// suites run instead of the stand-in.
	EnvServer = "POOLC_LLAMA_SERVER"
	// EnvGGUF names a GGUF model file the suites serve instead of the
	// stand-in's weights (a small one: the suites load it many times).
	EnvGGUF = "POOLC_LLAMA_GGUF"
)

// ServerBinary returns the llama-server the suites run, as dir/llama-server
// (so a test can put dir on a node's PATH): a link to $POOLC_LLAMA_SERVER
// when that is set, else the stand-in built there.
func ServerBinary(dir string) (string, error) {
	real := os.Getenv(EnvServer)
	if real == "" {
		return Build(dir)
	}
	if _, err := os.Stat(real); err != nil {
		return "", fmt.Errorf("%s: %v", EnvServer, err)
	}
	out := filepath.Join(dir, "llama-server")
	return out, os.Symlink(real, out)
}

// Skipper is the part of testing.TB NeedStandIn uses (the stand-in's
// binary does not link package testing).
type Skipper interface {
	Helper()
	Skipf(format string, args ...any)
}

// NeedStandIn skips t when the suites run a real llama-server: t depends
// on a timing or a fault only the stand-in's tuning gives (why says which).
func NeedStandIn(t Skipper, why string) {
	t.Helper()
	if os.Getenv(EnvServer) != "" {
		t.Skipf("needs the llama-server stand-in (%s unset): %s", EnvServer, why)
	}
}

// WriteModel writes a weights file at path for tests: stand-in weights
// of size bytes (at least the GGUF magic), which the stand-in loads in
// size/rate; or, when $POOLC_LLAMA_GGUF is set, a copy of that file with
// size as 8 bytes after its end, so that two sizes still make two
// different files (bytes the offsets in the GGUF header do not reach; not
// yet tried against a real build).
func WriteModel(path string, size int64) error {
	if real := os.Getenv(EnvGGUF); real != "" {
		var tag [8]byte
		binary.LittleEndian.PutUint64(tag[:], uint64(size))
		return copyFile(real, path, tag[:])
	}
	if size < int64(len(ggufMagic)) {
		size = int64(len(ggufMagic))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(ggufMagic); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Build compiles the stand-in into dir as "llama-server" and returns its
// path, so a test can put dir on a node's PATH.
func Build(dir string) (string, error) {
	out := filepath.Join(dir, "llama-server")
	cmd := exec.Command("go", "build", "-o", out, "poolc.dev/poolc/internal/testing/llamastub/cmd/llama-server-stub")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the llama-server stand-in: %v\n%s", err, b)
	}
	return out, nil
}

// ModelBytes returns fresh weights of size bytes for a test to serve,
// different at each call: the GGUF magic and random bytes, or, when
// $POOLC_LLAMA_GGUF is set, that file's bytes and 16 random ones after.
func ModelBytes(size int) ([]byte, error) {
	if real := os.Getenv(EnvGGUF); real != "" {
		b, err := os.ReadFile(real)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", EnvGGUF, err)
		}
		return append(b, []byte(rand.Text())[:16]...), nil
	}
	b := make([]byte, max(size, len(ggufMagic)))
	rand.Read(b)
	copy(b, ggufMagic)
	return b, nil
}

// copyFile copies from to to, with tail after its end.
func copyFile(from, to string, tail []byte) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("%s: %v", EnvGGUF, err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if _, err := out.Write(tail); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
