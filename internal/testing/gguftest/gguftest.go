// Package gguftest writes small but well-formed GGUF files for tests: a
// header with an architecture's hyperparameters and the tensor table of a
// transformer of that shape, followed by tensor data that is all zeros (a
// sparse file on disk, or generated on the fly when served over HTTP). A
// memory estimator reads only the header, so a test can describe a model
// of gigabytes while writing a few kilobytes.
package gguftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Model describes the transformer a file declares. Its matrices are of
// Type, its norm vectors F32.
type Model struct {
	// Type is the matrices' GGML type: "f16" (the default), "q8_0" or
	// "q4_0".
	Type string
	// Arch is the value of general.architecture: "llama", "qwen2", "qwen3"
	// and other llama-shaped architectures whose keys are prefixed by it.
	Arch string
	// Context is the training context length (<arch>.context_length).
	Context uint32
	// Embedding, FeedForward, Layers, Heads, KVHeads and Vocab are the
	// model's widths and counts.
	Embedding, FeedForward, Layers, Heads, KVHeads, Vocab uint32
}

// alignment is general.alignment's default: tensor data starts on it.
const alignment = 32

// GGUF metadata value types used here.
const (
	typeUint32 = 4
	typeString = 8
)

// ggmlTypes are the GGML types a file may use: type id, and bytes per
// block of 32 elements.
var ggmlTypes = map[string]struct{ id, block uint64 }{
	"f32": {0, 128}, "f16": {1, 64}, "q4_0": {2, 18}, "q8_0": {8, 34},
}

type tensor struct {
	name string
	dims []uint64
}

func (m Model) tensors() []tensor {
	e, f, v := uint64(m.Embedding), uint64(m.FeedForward), uint64(m.Vocab)
	kv := e / uint64(m.Heads) * uint64(m.KVHeads)
	ts := []tensor{{"token_embd.weight", []uint64{e, v}}, {"output_norm.weight", []uint64{e}}, {"output.weight", []uint64{e, v}}}
	for i := range m.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			tensor{p + "attn_norm.weight", []uint64{e}},
			tensor{p + "attn_q.weight", []uint64{e, e}},
			tensor{p + "attn_k.weight", []uint64{e, kv}},
			tensor{p + "attn_v.weight", []uint64{e, kv}},
			tensor{p + "attn_output.weight", []uint64{e, e}},
			tensor{p + "ffn_norm.weight", []uint64{e}},
			tensor{p + "ffn_gate.weight", []uint64{e, f}},
			tensor{p + "ffn_up.weight", []uint64{e, f}},
			tensor{p + "ffn_down.weight", []uint64{f, e}},
		)
	}
	return ts
}

// Header returns the file's header (everything before the tensor data,
// padded to the alignment) and the size of the whole file.
func (m Model) Header() (header []byte, size int64) {
	var b bytes.Buffer
	le := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	str := func(s string) { le(uint64(len(s))); b.WriteString(s) }
	ts := m.tensors()
	kvs := []struct {
		key string
		val any
	}{
		{"general.architecture", m.Arch},
		{"general.name", "gguftest-" + m.Arch},
		{m.Arch + ".context_length", m.Context},
		{m.Arch + ".embedding_length", m.Embedding},
		{m.Arch + ".feed_forward_length", m.FeedForward},
		{m.Arch + ".block_count", m.Layers},
		{m.Arch + ".attention.head_count", m.Heads},
		{m.Arch + ".attention.head_count_kv", m.KVHeads},
		{m.Arch + ".vocab_size", m.Vocab},
	}
	b.WriteString("GGUF")
	le(uint32(3))
	le(uint64(len(ts)))
	le(uint64(len(kvs)))
	for _, kv := range kvs {
		str(kv.key)
		switch v := kv.val.(type) {
		case string:
			le(uint32(typeString))
			str(v)
		case uint32:
			le(uint32(typeUint32))
			le(v)
		}
	}
	var offset uint64
	for _, t := range ts {
		str(t.name)
		le(uint32(len(t.dims)))
		n := uint64(1)
		for _, d := range t.dims {
			le(d)
			n *= d
		}
		typ := ggmlTypes["f32"]
		if len(t.dims) > 1 {
			typ = ggmlTypes[m.matrixType()]
		}
		le(uint32(typ.id))
		le(offset)
		offset = pad(offset + n/32*typ.block)
	}
	b.Write(make([]byte, pad(uint64(b.Len()))-uint64(b.Len())))
	return b.Bytes(), int64(b.Len()) + int64(offset)
}

func (m Model) matrixType() string {
	if _, ok := ggmlTypes[m.Type]; ok {
		return m.Type
	}
	return "f16"
}

func pad(n uint64) uint64 { return (n + alignment - 1) / alignment * alignment }

// Write writes the model's file at path: the header, then zeros up to the
// full size as a sparse file. The file is written beside path and renamed
// into place, so a reader never sees it half written.
func (m Model) Write(path string) error {
	h, size := m.Header()
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(h)
	if err == nil {
		err = f.Truncate(size)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// ExampleDir is where the pools in examples/memory find their models'
// files (their sources are file:// URLs under it).
const ExampleDir = "/tmp/poolc-example-models"

// Examples are the files the pools in examples/memory read, by file name:
// an 8B- and a 32B-shaped qwen3 and a 3B-shaped llama, their matrices
// quantised to 4 bits.
var Examples = map[string]Model{
	"qwen3-8b-q4.gguf":  {Arch: "qwen3", Type: "q4_0", Context: 40960, Embedding: 4096, FeedForward: 12288, Layers: 36, Heads: 32, KVHeads: 8, Vocab: 151936},
	"qwen3-32b-q4.gguf": {Arch: "qwen3", Type: "q4_0", Context: 40960, Embedding: 5120, FeedForward: 25600, Layers: 64, Heads: 64, KVHeads: 8, Vocab: 151936},
	"llama-3b-q4.gguf":  {Arch: "llama", Type: "q4_0", Context: 131072, Embedding: 3072, FeedForward: 8192, Layers: 28, Heads: 24, KVHeads: 8, Vocab: 128256},
}

// WriteExamples writes the Examples into dir, creating it.
func WriteExamples(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, m := range Examples {
		if err := m.Write(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// Reader returns the whole file as an io.ReadSeeker without holding its
// data: the header, then zeros. http.ServeContent serves it with range
// requests.
func (m Model) Reader() io.ReadSeeker {
	h, size := m.Header()
	return io.NewSectionReader(zeroTail{h}, 0, size)
}

// zeroTail reads as the header followed by zeros without end.
type zeroTail struct{ head []byte }

func (z zeroTail) ReadAt(p []byte, off int64) (int, error) {
	clear(p)
	if off < int64(len(z.head)) {
		copy(p, z.head[off:])
	}
	return len(p), nil
}
