package memest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// No command line makes ParseArgs panic, and what it accepts it can name.
func FuzzParseArgs(f *testing.F) {
	f.Add("-c\x0032768\x00-np\x00-1\x00-fa\x00on")
	f.Add("--ctx-size=0\x00-ctk\x00q8_0\x00-ctv\x00iq4_nl\x00-b\x0064\x00-ub\x00128")
	f.Add("-fa\x00--parallel\x00")
	f.Fuzz(func(t *testing.T, line string) {
		a, err := ParseArgs(strings.Split(line, "\x00"))
		if err == nil {
			_ = a.String()
			_ = a.options()
		}
	})
}

// No file makes the estimator panic: a header it cannot read or price is
// an error.
func FuzzEstimateFile(f *testing.F) {
	h, _ := models["llama-1b"].Header()
	f.Add(h)
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "m.gguf")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = (&Estimator{}).Estimate(context.Background(), Model{Source: "file://" + path, Args: []string{"-c", "512"}})
	})
}
