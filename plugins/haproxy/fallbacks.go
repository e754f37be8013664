package haproxy

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
)

// The configuration tries each alias's fallbacks with a fixed number of
// rules (fallbackDepth: the longest declared list, MinFallbackDepth at
// least), read when HAProxy loads it; the lists themselves are in the
// fallback map, which changes at runtime. So a list that grows past the
// depth of the configuration HAProxy runs needs a reload, which the
// gateway does itself (ensureFallbackDepth), and a list that changed in
// the pool is observed (StaleFallbacks), so that the next apply routes
// the alias again, which rewrites the map.

// depthRE finds the fallback rules' positions in a configuration.
var depthRE = regexp.MustCompile(`field\((\d+),\+\)`)

// configDepth is how many fallbacks a configuration's rules try.
func configDepth(cfg string) int {
	n := 0
	for _, m := range depthRE.FindAllStringSubmatch(cfg, -1) {
		if k, err := strconv.Atoi(m[1]); err == nil {
			n = max(n, k)
		}
	}
	return n
}

// runningDepth is how many fallbacks the configuration HAProxy runs
// tries: that of the configuration file, which the gateway writes before
// every reload it makes and restores when the reload fails.
func (g *Gateway) runningDepth(ctx context.Context) (int, []byte, error) {
	b, err := g.files.ReadFile(ctx, g.configFile)
	if err != nil {
		return 0, nil, fmt.Errorf("haproxy: reading %s: %w", g.configFile, err)
	}
	return configDepth(string(b)), b, nil
}

// ensureFallbackDepth reloads HAProxy with the declared configuration
// when an alias declares more fallbacks than the rules of the one it runs
// try. Without the master CLI it says what is not tried until someone
// reloads.
func (g *Gateway) ensureFallbackDepth(ctx context.Context, say func(string, ...any)) error {
	if g.declared == nil || g.configFile == "" || len(g.declared.Lanes) == 0 {
		return nil // no lane, no fallback rules
	}
	want := fallbackDepth(*g.declared)
	have, _, err := g.runningDepth(ctx)
	if err != nil || have >= want {
		return err
	}
	if g.master == nil {
		say("an alias has %d fallbacks where the configuration HAProxy runs tries %d: the rest are tried once HAProxy reloads (set the haproxy plugin's master_socket so that poolc reloads it)", want, have)
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	have, old, err := g.runningDepth(ctx)
	if err != nil || have >= want {
		return err
	}
	if err := g.persistForReload(ctx); err != nil {
		return err
	}
	if err := g.reload(ctx, fmt.Sprintf("its rules try %d fallbacks per alias, where they tried %d", want, have), say); err != nil {
		// The file says what runs: a later step tries the reload again.
		if werr := g.files.WriteFile(ctx, g.configFile, old); werr != nil {
			return fmt.Errorf("%w; restoring %s: %v", err, g.configFile, werr)
		}
		return err
	}
	return nil
}

// StaleFallbacks returns the aliases whose fallbacks HAProxy does not try
// as declared: its fallback map gives another list, or the list is
// longer than the configuration it runs tries. Nil when the gateway does
// not keep the configuration (no declared spec).
func (g *Gateway) StaleFallbacks(ctx context.Context) ([]string, error) {
	if g.declared == nil || g.configFile == "" {
		return nil, nil
	}
	depth, _, err := g.runningDepth(ctx)
	if err != nil || depth == 0 {
		return nil, err // no fallback rules: no lane yet, whose route reloads
	}
	out, err := g.rt.Exec(ctx, "show", "map", FallbackMapFile(g.mapFile))
	if err != nil {
		return nil, err
	}
	have, err := parseMap(out)
	if err != nil {
		return nil, err
	}
	want := fallbackRoutes(g.declared.Aliases)
	var stale []string
	for _, a := range g.declared.Aliases {
		if have[a.Alias] != want[a.Alias] || len(a.Fallbacks) > depth {
			stale = append(stale, a.Alias)
		}
	}
	slices.Sort(stale)
	return stale, nil
}
