package llamastub

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strconv"
)

// presetModel makes the router's model of a preset section.
func (s *Server) presetModel(pm PresetModel) *model {
	slots := s.opts.Parallel
	if v, err := strconv.Atoi(pm.Settings["parallel"]); err == nil && v > 0 {
		slots = v
	}
	m := newModel(pm.Name, pm.Path, pm.Aliases, slots, s.tune, s.log)
	m.settings, m.spawn = pm.Settings, s.tune.ChildStart
	return m
}

// loadPreset reads the router's --models-preset.
func (s *Server) loadPreset() (*Preset, error) {
	text, err := os.ReadFile(s.opts.ModelsPreset)
	if err != nil {
		return nil, err
	}
	return ParsePreset(s.opts.ModelsPreset, string(text))
}

// list is the router's models as they are now.
func (s *Server) list() []*model {
	s.routerMu.Lock()
	defer s.routerMu.Unlock()
	return append([]*model(nil), s.models...)
}

// running reports whether a model has a process in llama-server's router:
// loading, loaded or sleeping.
func running(state string) bool {
	return state == StateLoading || state == StateLoaded || state == StateSleeping
}

// sameSection reports whether two settings of a section are the same
// once the alias is left out: the router compares a running model's
// preset that way, so an alias change alone leaves it running, with the
// aliases it started with.
func sameSection(a, b map[string]string) bool {
	a, b = maps.Clone(a), maps.Clone(b)
	delete(a, "alias")
	delete(b, "alias")
	return maps.Equal(a, b)
}

// reload rereads the preset, as GET /models?reload=1 makes llama-server's
// router do. A running model whose section is gone or changed (alias
// aside) is stopped, cutting its streams, and the reload waits until its
// process has exited; a model whose section is gone leaves the list; a
// model not running takes its section as it is now (path, aliases,
// settings); a new section adds a model, loaded at once when it says
// load-on-startup. A running model whose section is the same is left
// alone, requests in flight and all.
func (s *Server) reload(ctx context.Context) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	p, err := s.loadPreset()
	if err != nil {
		return err
	}
	sections := map[string]PresetModel{}
	for _, pm := range p.Models {
		sections[pm.Name] = pm
	}
	have := map[string]bool{}
	var kept []*model
	var stopping []*model
	for _, m := range s.list() {
		pm, ok := sections[m.name]
		if st := m.snapshot().state; running(st) {
			if ok && sameSection(m.settings, pm.Settings) {
				kept, have[m.name] = append(kept, m), true
				continue
			}
			m.stop()
			stopping = append(stopping, m)
			fmt.Fprintf(s.log, "srv    load_models: (reload) unloading model name=%s (source updated or removed)\n", m.name)
		}
		if !ok {
			fmt.Fprintf(s.log, "srv    load_models: (reload) removing model name=%s (no longer in source)\n", m.name)
			continue
		}
		kept, have[m.name] = append(kept, s.presetModel(pm)), true
	}
	var startup []*model
	for _, pm := range p.Models {
		if !have[pm.Name] {
			m := s.presetModel(pm)
			kept = append(kept, m)
			if pm.LoadOnStartup {
				startup = append(startup, m)
			}
		}
	}
	s.routerMu.Lock()
	s.models, s.exiting = kept, stopping
	s.routerMu.Unlock()
	defer func() {
		s.routerMu.Lock()
		s.exiting = nil
		s.routerMu.Unlock()
	}()
	for _, m := range stopping {
		select {
		case <-m.stop():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.loadOnStartup(startup)
	return nil
}

// loadOnStartup loads models the preset says to load at once, each
// waiting for room at --models-max in the background.
func (s *Server) loadOnStartup(ms []*model) {
	for _, m := range ms {
		go func() {
			if err := s.admit(context.Background(), m); err != nil {
				fmt.Fprintln(s.log, "srv    load-on-startup:", err)
			}
		}()
	}
}
