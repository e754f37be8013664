package orchestrate

import (
	"fmt"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/plugins/kube"
	"poolc.dev/poolc/plugins/kube/synced"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store"
	"poolc.dev/poolc/runner/store/backends"
)

// OpenState returns the state backend of a configuration: the state file
// statePath when one is given (--state), else the one its state block
// chooses. The caller closes it.
func OpenState(cfg *compiler.Config, statePath string) (store.Backend, error) {
	if statePath != "" {
		return store.Open(statePath), nil
	}
	return backends.Open(cfg.Pool, cfg.Dir(), cfg.StatePath())
}

// PodMembers returns pod pool pp's members as kube.Members does, each
// with the image copy its registry serves according to the state of
// cfg's pool (synced.WithCopies). A pod pool without image, image-sync
// plugin or registries reads no state.
func PodMembers(cfg *compiler.Config, pp pools.PodPool) ([]kube.Member, error) {
	members := kube.Members(pp)
	if pp.Image == "" || pp.ImageSync == "" || !hasRegistry(pp) {
		return members, nil
	}
	b, err := OpenState(cfg, "")
	if err != nil {
		return nil, err
	}
	defer b.Close()
	st, err := store.ReadPool(b, cfg.Pool.Name)
	if err != nil {
		return nil, fmt.Errorf("reading the state for the members' image copies: %w", err)
	}
	return synced.WithCopies(members, pp.Image, st.Fleet), nil
}

func hasRegistry(pp pools.PodPool) bool {
	for _, m := range pp.Members {
		if !m.Registry.IsZero() {
			return true
		}
	}
	return false
}
