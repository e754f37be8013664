package llama

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"poolc.dev/poolc/plugins/sdk"
)

// processes are the lanes' processes on the node as their pidfiles
// record them: what runs (the status of every pidfile, which process
// holds a lane's port), signals to one, and the forgetting of pidfiles
// whose process is gone.
type processes struct {
	*session
}

// laneMeta is what the start writes beside a lane's pidfile, so observe
// knows which port and model the process should answer with.
type laneMeta struct {
	Name    string   `json:"name"`
	Host    string   `json:"host"`
	Port    int      `json:"port"`
	Model   string   `json:"model"`
	Aliases []string `json:"aliases"`
	SHA256  string   `json:"sha256,omitempty"`
	Source  string   `json:"source,omitempty"`
	// Residency is the lane's residency as started or last changed in
	// place; metadata written before it was recorded has none.
	Residency string `json:"residency,omitempty"`
	// Models and ModelsMax are a router's: the on-demand lanes its preset
	// holds and its --models-max.
	Models    []RouterModel `json:"models,omitempty"`
	ModelsMax int           `json:"models_max,omitempty"`
}

func (m laneMeta) lane() Lane {
	return Lane{Name: m.Name, Host: m.Host, Port: m.Port, Model: m.Model, Aliases: m.Aliases, SHA256: m.SHA256, Source: m.Source, Residency: m.Residency}
}

// status reads every pidfile of the node's state directory and the
// node's memory.
func (p *processes) status(ctx context.Context) (nodeStatus, error) {
	out, err := p.run(ctx, scriptStatus, p.set.StateDir)
	if err != nil {
		return nodeStatus{}, fmt.Errorf("reading the lanes of %s: %w", p.host, err)
	}
	return parseStatus(out)
}

// process is what the node reports of lane l's live process (pid, own
// command line, resident memory), nil when it cannot tell.
func (p *processes) process(ctx context.Context, l Lane) *sdk.LaneProcess {
	st, err := p.status(ctx)
	if err != nil {
		return nil
	}
	r, ok := st.lane(l)
	if !ok || !r.alive {
		return nil
	}
	return &sdk.LaneProcess{PID: r.pid, CommandLine: r.argv, ResidentBytes: r.rss}
}

// owner reports whether process pid lives and who listens on lane l's
// port.
func (p *processes) owner(ctx context.Context, pid int, l Lane) (owner, error) {
	out, err := p.run(ctx, scriptOwner, strconv.Itoa(pid), strconv.Itoa(l.Port))
	if err != nil {
		return owner{}, fmt.Errorf("who listens on port %d of %s: %w", l.Port, p.host, err)
	}
	return parseOwner(out)
}

// identity checks that process pid is alive and that nothing but it
// holds lane l's port. A port held by another process it can name is a
// *PortHeldError.
func (p *processes) identity(ctx context.Context, pid int, l Lane) (identityCheck, error) {
	o, err := p.owner(ctx, pid, l)
	if err != nil {
		return identityCheck{}, err
	}
	c := identityCheck{alive: o.alive}
	for _, h := range o.holders(l) {
		switch h.pid {
		case pid:
			c.listening = true
		case 0:
			c.unseen = true
		default:
			return c, &PortHeldError{Lane: l.Name, Host: p.host.String(), Port: l.Port, PID: pid, Holder: h}
		}
	}
	return c, nil
}

// alive reports whether process pid runs on the node.
func (p *processes) alive(ctx context.Context, pid string) (bool, error) {
	out, err := p.run(ctx, scriptAlive, pid)
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(out) == "alive", nil
}

// waitGone polls until process pid has exited or d passes.
func (p *processes) waitGone(ctx context.Context, pid string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		alive, err := p.alive(ctx, pid)
		if err == nil && !alive {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(p.set.Poll):
		}
	}
}

// signalStop sends process pid SIGTERM and, if it has not exited after
// StopGrace, SIGKILL.
func (p *processes) signalStop(ctx context.Context, l Lane, pid string, progress Progress) error {
	if _, err := p.run(ctx, scriptSignal, "TERM", pid); err != nil {
		return err
	}
	if p.waitGone(ctx, pid, p.set.StopGrace) {
		return nil
	}
	if progress != nil {
		progress(fmt.Sprintf("lane %s (pid %s) still up %s after SIGTERM; sending SIGKILL", l.Name, pid, p.set.StopGrace))
	}
	if _, err := p.run(ctx, scriptSignal, "KILL", pid); err != nil {
		return err
	}
	if !p.waitGone(ctx, pid, p.set.StopGrace) {
		return fmt.Errorf("lane %s (pid %s) on %s survives SIGKILL", l.Name, pid, p.host)
	}
	return nil
}

// logTail is the end of the log of the lane whose files key names.
func (p *processes) logTail(key string) string {
	// The lane failed already; the log is best effort, so it gets its own
	// short deadline instead of the step's, which may have passed.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := p.run(ctx, scriptLogTail, p.set.StateDir, key)
	return out
}

// forgetGone carries out Node.ForgetGone.
func (p *processes) forgetGone(ctx context.Context, progress Progress) error {
	st, err := p.status(ctx)
	if err != nil {
		return err
	}
	m, err := p.set.manager()
	if err != nil {
		return err
	}
	for _, key := range st.order {
		if st.records[key].alive {
			continue
		}
		out, err := p.run(ctx, m.forgetGone, p.set.StateDir, key, m.unit(key))
		if err != nil {
			return err
		}
		if pid, ok := strings.CutPrefix(strings.TrimSpace(out), "forgot "); ok && progress != nil {
			progress(fmt.Sprintf("forgot %s's pidfile: pid %s is gone", key, pid))
		}
	}
	return nil
}
