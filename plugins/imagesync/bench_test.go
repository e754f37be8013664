package imagesync

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Benchmark image: benchLayers layers of benchLayerBytes each.
const (
	benchLayers     = 8
	benchLayerBytes = 4 << 20
)

// benchSync measures a first sync of an 8-layer image to an empty
// destination and a sync of the same image with one layer changed, to
// destinations made by fresh (a new empty registry or repository for
// every call), and reports the bytes sent beside the size of a `docker
// save` tarball of the image.
func benchSync(b *testing.B, fresh func(b *testing.B) Destination) {
	ctx := context.Background()
	base := layers(b, benchLayers, benchLayerBytes)
	img := imageOf(b, base, nil)
	art := artifactOf(b, img)
	changed := append(append([]v1.Layer{}, base[:benchLayers-1]...), layers(b, 1, benchLayerBytes)...)
	art2 := artifactOf(b, imageOf(b, changed, nil))
	tag, _ := name.NewTag("elanous-harness:bench")
	var tarBytes countWriter
	if err := tarball.Write(tag, img, &tarBytes); err != nil {
		b.Fatal(err)
	}
	report := func(b *testing.B, sent int64, took time.Duration) {
		b.ReportMetric(float64(sent)/float64(b.N), "sent-B/op")
		b.ReportMetric(float64(tarBytes), "docker-save-B")
		b.ReportMetric(took.Seconds()/float64(b.N), "sync-s/op")
	}
	b.Run("first", func(b *testing.B) {
		var sent int64
		var took time.Duration
		for b.Loop() {
			d := fresh(b)
			start := time.Now()
			res := Sync(ctx, art, d, Options{})
			took += time.Since(start)
			if res.Err != nil {
				b.Fatal(res.Err)
			}
			sent += res.BytesSent
		}
		report(b, sent, took)
	})
	b.Run("one-layer-changed", func(b *testing.B) {
		var sent int64
		var took time.Duration
		for b.Loop() {
			b.StopTimer()
			d := fresh(b)
			if res := Sync(ctx, art, d, Options{}); res.Err != nil {
				b.Fatal(res.Err)
			}
			b.StartTimer()
			start := time.Now()
			res := Sync(ctx, art2, d, Options{})
			took += time.Since(start)
			if res.Err != nil {
				b.Fatal(res.Err)
			}
			sent += res.BytesSent
		}
		report(b, sent, took)
	})
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

// BenchmarkSyncLoopback syncs to go-containerregistry's in-memory
// registry on a loopback port (a new registry for every sync: its blob
// store is shared by all repositories).
func BenchmarkSyncLoopback(b *testing.B) {
	benchSync(b, func(b *testing.B) Destination {
		return newTestRegistry(b).dest("bench", "harness")
	})
}

// BenchmarkSyncIndexOneLayerChanged syncs a two-platform index (linux
// amd64 and arm64, each of benchLayers layers of benchLayerBytes, the
// first shared) to the loopback registry, then the index with one layer
// of its amd64 image changed, and reports the bytes the second sync sent
// per byte of the changed layer (moved-x-layer): what else moves is the
// new config and the two manifests. It fails above 1.05.
func BenchmarkSyncIndexOneLayerChanged(b *testing.B) {
	ctx := context.Background()
	amd64 := &v1.Platform{OS: "linux", Architecture: "amd64"}
	arm64 := &v1.Platform{OS: "linux", Architecture: "arm64"}
	shared := layers(b, 1, benchLayerBytes)
	amdLayers := append(append([]v1.Layer{}, shared...), layers(b, benchLayers-1, benchLayerBytes)...)
	armLayers := append(append([]v1.Layer{}, shared...), layers(b, benchLayers-1, benchLayerBytes)...)
	index := func(amd []v1.Layer) *Artifact {
		idx := mutate.AppendManifests(empty.Index,
			mutate.IndexAddendum{Add: imageOf(b, amd, amd64), Descriptor: v1.Descriptor{Platform: amd64}},
			mutate.IndexAddendum{Add: imageOf(b, armLayers, arm64), Descriptor: v1.Descriptor{Platform: arm64}},
		)
		art, err := Load(ctx, Source{Kind: SourceOCILayout, Path: writeLayout(b, nil, idx)}, SourceTransport{})
		if err != nil {
			b.Fatal(err)
		}
		return art
	}
	before := index(amdLayers)
	changed := layers(b, 1, benchLayerBytes)[0]
	after := index(append(append([]v1.Layer{}, amdLayers[:benchLayers-1]...), changed))
	layerBytes := mustSize(b, changed)
	var sent int64
	for b.Loop() {
		b.StopTimer()
		d := newTestRegistry(b).dest("bench", "harness")
		if res := Sync(ctx, before, d, Options{}); res.Err != nil {
			b.Fatal(res.Err)
		}
		b.StartTimer()
		res := Sync(ctx, after, d, Options{})
		if res.Err != nil {
			b.Fatal(res.Err)
		}
		sent += res.BytesSent
	}
	ratio := float64(sent) / float64(b.N) / float64(layerBytes)
	b.ReportMetric(float64(sent)/float64(b.N), "sent-B/op")
	b.ReportMetric(float64(layerBytes), "layer-B")
	b.ReportMetric(ratio, "moved-x-layer")
	if ratio > 1.05 {
		b.Errorf("a one-layer change of the index moved %.4f× the layer's bytes, want at most 1.05×", ratio)
	}
}
