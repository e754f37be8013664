package imagesync

import (
	"context"
	"fmt"
)

// Inspect returns the plan of a sync of art to dest without writing
// anything: which blobs and manifests the registry lacks and how many
// bytes a sync would move.
func Inspect(ctx context.Context, art *Artifact, dest Destination) (Plan, error) {
	t, err := dest.connect(ctx, DefaultJobs)
	if err != nil {
		return Plan{}, fmt.Errorf("member %s: %w", dest.Member, err)
	}
	defer t.close()
	return t.plan(ctx, art)
}
