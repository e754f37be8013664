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
)

// Model describes the transformer a file declares. Every tensor is F16.
type Model struct {
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

// ggmlF16 is the GGML type of half-precision tensors, 2 bytes per element.
const ggmlF16 = 1

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
		le(uint32(ggmlF16))
		le(offset)
		offset = pad(offset + 2*n)
	}
	b.Write(make([]byte, pad(uint64(b.Len()))-uint64(b.Len())))
	return b.Bytes(), int64(b.Len()) + int64(offset)
}

func pad(n uint64) uint64 { return (n + alignment - 1) / alignment * alignment }

// Write writes the model's file at path: the header, then zeros up to the
// full size as a sparse file.
func (m Model) Write(path string) error {
	h, size := m.Header()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(h); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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
