package haproxy

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// The gateway keeps HAProxy's configuration (Options.ConfigFile) as well
// as its map and server state: HAProxy 2.6 restores a server's state and
// port from its server state file but not an address set at runtime (a
// server configured with an IP keeps the configured one; checked on
// Debian's 2.6.12), and servers added at runtime are gone after a
// reload. So after every change the configuration is rewritten from the
// declared spec with every server's address and state as HAProxy has
// them, and a restart or reload by anyone finds every route.

// reloadWait bounds the wait for a reloaded HAProxy to serve a backend.
const reloadWait = 30 * time.Second

// writeConfig rewrites the configuration file, and the fallback map
// (file and, when HAProxy has it loaded, runtime), from the declared spec
// and the servers HAProxy runs now. Unless it is for a reload, the rules
// try no more fallbacks than those of the file, which HAProxy runs: the
// file says what runs, so a deeper list is seen (ensureFallbackDepth)
// and reloaded for, whichever change wrote the file first.
func (g *Gateway) writeConfig(ctx context.Context, forReload bool) error {
	srvs, err := g.allServers(ctx)
	if err != nil {
		return err
	}
	spec := *g.declared
	spec.MapFile, spec.StateFile = g.mapFile, g.state
	if !forReload {
		if running, _, err := g.runningDepth(ctx); err == nil && running > 0 && running < fallbackDepth(spec) {
			spec.FallbackDepth = running
		}
	}
	spec.Lanes = nil
	for _, l := range g.declared.Lanes {
		be := LaneBackendName(l.Lane)
		slots := make([]Slot, ServerSlots)
		found := false
		for _, s := range srvs {
			var i int
			if s.Backend != be || s.Addr == "" {
				continue
			}
			if _, err := fmt.Sscanf(s.Name, "s%d", &i); err != nil || i < 1 || i > ServerSlots {
				continue
			}
			found = true
			if s.Port > 1 {
				slots[i-1] = Slot{Addr: s.Addr, Port: s.Port, Ready: !s.Maint()}
			}
		}
		if !found {
			slots = nil // a lane HAProxy has no backend for yet: as declared
		}
		spec.Lanes = append(spec.Lanes, LaneBackend{Lane: l.Lane, Addr: l.Addr, Port: l.Port, Slots: slots})
	}
	cfg, _, err := Config(spec)
	if err != nil {
		return fmt.Errorf("haproxy: the declared configuration: %w", err)
	}
	fallbacks := FallbackMapFile(g.mapFile)
	if err := g.files.WriteFile(ctx, fallbacks, []byte(FallbackMap(spec))); err != nil {
		return fmt.Errorf("haproxy: writing %s: %w", fallbacks, err)
	}
	if err := g.syncFallbacks(ctx, spec); err != nil {
		return err
	}
	if err := g.files.WriteFile(ctx, g.configFile, []byte(cfg)); err != nil {
		return fmt.Errorf("haproxy: writing %s: %w", g.configFile, err)
	}
	return nil
}

// reload has HAProxy reload its configuration through the master CLI
// and waits until the admin socket answers from the new worker.
func (g *Gateway) reload(ctx context.Context, why string, say func(string, ...any)) error {
	old := g.workerPID(ctx)
	if _, err := (Runtime{Dial: g.master}).Exec(ctx, "reload"); err != nil {
		return fmt.Errorf("haproxy: reloading through the master CLI: %w", err)
	}
	deadline := time.Now().Add(reloadWait)
	for {
		if pid := g.workerPID(ctx); pid != "" && pid != old {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("haproxy: no new worker answers %s after a reload with %s", reloadWait, g.configFile)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(g.poll):
		}
	}
	say("haproxy reloaded with %s: %s", g.configFile, why)
	return nil
}

// workerPID is the pid of the worker answering the admin socket, "" when
// none answers.
func (g *Gateway) workerPID(ctx context.Context) string {
	out, err := g.rt.Exec(ctx, "show", "info")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Pid: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// syncFallbacks makes HAProxy's fallback map at runtime the declared one,
// when it has the map loaded (a configuration with no fallback has not).
func (g *Gateway) syncFallbacks(ctx context.Context, spec Spec) error {
	file := FallbackMapFile(g.mapFile)
	out, err := g.rt.Exec(ctx, "show", "map", file)
	if err != nil {
		return nil // not loaded: the next reload reads the file
	}
	have, err := parseMap(out)
	if err != nil {
		return err
	}
	want := fallbackRoutes(spec.Aliases)
	for a, v := range want {
		switch cur, ok := have[a]; {
		case !ok:
			_, err = g.rt.Exec(ctx, "add", "map", file, a, v)
		case cur != v:
			_, err = g.rt.Exec(ctx, "set", "map", file, a, v)
		}
		if err != nil {
			return err
		}
	}
	for a := range have {
		if _, ok := want[a]; !ok {
			if _, err := g.rt.Exec(ctx, "del", "map", file, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensureBackend makes sure HAProxy has backend be: when it has not (a
// lane added to the pool since its configuration was written), the
// gateway rewrites the configuration and has HAProxy reload it through
// its master CLI, which starts a new worker on it while the old one
// finishes its sessions; HAProxy 2.6 cannot add a backend at runtime.
// The reload waits for the gateway's other changes in flight (g.mu): a
// change made on the old worker after the new one read the files would
// be lost.
func (g *Gateway) ensureBackend(ctx context.Context, be string, say func(string, ...any)) error {
	if _, err := g.rt.Exec(ctx, "show", "servers", "state", be); err == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	_, err := g.rt.Exec(ctx, "show", "servers", "state", be)
	if err == nil || !strings.Contains(err.Error(), "Can't find backend") {
		return err
	}
	if g.configFile == "" || g.master == nil {
		return fmt.Errorf("%w: the configuration HAProxy runs has no backend for this lane; set the haproxy plugin's config_file and master_socket so that poolc writes it and reloads HAProxy itself, or re-run poolc gateway config and reload HAProxy", err)
	}
	if err := g.persistForReload(ctx); err != nil {
		return err
	}
	if err := g.reload(ctx, "for backend "+be, say); err != nil {
		return err
	}
	deadline := time.Now().Add(reloadWait)
	for {
		_, err := g.rt.Exec(ctx, "show", "servers", "state", be)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("haproxy: no backend %s %s after a reload with %s: %w", be, reloadWait, g.configFile, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(g.poll):
		}
	}
}
