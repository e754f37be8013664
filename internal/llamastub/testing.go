package llamastub

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// WriteModel writes a stand-in weights file of size bytes (at least the
// GGUF magic) at path, for tests: the stand-in loads it in size/rate.
func WriteModel(path string, size int64) error {
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
	cmd := exec.Command("go", "build", "-o", out, "poolc.dev/poolc/internal/llamastub/cmd/llama-server-stub")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the llama-server stand-in: %v\n%s", err, b)
	}
	return out, nil
}
