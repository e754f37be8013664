package render

import (
	"testing"

	"poolc.dev/poolc/pools"
)

// An image-sync whose bytes the plugin measured says how much it sends;
// one without a measurement says nothing of bytes.
func TestImageSyncTitleShowsTheBytesToSend(t *testing.T) {
	m := pools.MemberState{PodPool: "harness", Context: "a", Registry: "k3d-reg:5000", Image: "app@sha256:11"}
	s := pools.Step{Kind: pools.StepImageSync, Member: &m, Estimate: pools.Estimate{Seconds: 30, TransferGB: 0.0124, TransferBytes: 12_400_000}}
	if got, want := Title(&pools.Plan{}, s), "image-sync app@sha256:11 to harness/a (k3d-reg:5000, 12.4 MB to send)"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	s.Estimate = pools.Estimate{Seconds: 30}
	if got, want := Title(&pools.Plan{}, s), "image-sync app@sha256:11 to harness/a (k3d-reg:5000)"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
}
