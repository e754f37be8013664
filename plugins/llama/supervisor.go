package llama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// StartError is a lane that did not come up: it exited while loading or
// did not answer in time. Log is the tail of its log.
type StartError struct {
	Lane   string
	Reason string
	Log    string
}

// Error implements error.
func (e *StartError) Error() string {
	msg := fmt.Sprintf("lane %s %s", e.Lane, e.Reason)
	if s := strings.TrimSpace(e.Log); s != "" {
		msg += "; its log ends:\n" + s
	}
	return msg
}

// supervisor runs the lanes' own processes: it starts one under the
// settings' service manager (detached, a systemd user unit or a
// LaunchAgent), waits until it serves as the lane, records a change of
// its residency, and drains and stops it.
type supervisor struct {
	*session
	procs *processes
	drain *drainer
}

// start carries out Node.Start.
func (sv *supervisor) start(ctx context.Context, l Lane, progress Progress) error {
	if err := l.Validate(); err != nil {
		return err
	}
	return sv.launchMeta(ctx, l, laneMeta{}, sv.set.argv(l), progress)
}

// launchMeta starts the server argv as lane l unless l runs, with the
// metadata's router fields from meta, and waits until it serves. The
// process runs as the settings' service manager says: detached, with
// the environment on stdin after the metadata (one NAME=value a line),
// or as a unit whose file poolc renders here and passes on stdin.
func (sv *supervisor) launchMeta(ctx context.Context, l Lane, meta laneMeta, argv []string, progress Progress) error {
	meta.Name, meta.Host, meta.Port, meta.Model, meta.Aliases = l.Name, l.listenHost(), l.Port, l.Model, sortedSet(l.Aliases)
	meta.SHA256, meta.Source, meta.Residency = l.SHA256, l.Source, l.Residency
	line, _ := json.Marshal(meta)
	m, err := sv.set.manager()
	if err != nil {
		return err
	}
	env, err := sv.set.environ()
	if err != nil {
		return err
	}
	unit := m.unit(l.key())
	args := []string{sv.set.StateDir, l.key(), unit}
	stdin := string(line) + "\n"
	if m.render == nil {
		// The environment goes on stdin, never on a command line, which
		// every user of the node can read (ps): a token stays the lane's.
		args = append(args, argv...)
		for _, kv := range env {
			stdin += kv + "\n"
		}
	} else {
		text, err := sv.unitFile(ctx, m, unitSpec{Name: unit, Lane: l.key(), Argv: argv, Env: env, StopGrace: sv.set.StopGrace})
		if err != nil {
			return fmt.Errorf("starting lane %s on %s: %w", l.Name, sv.host, err)
		}
		stdin += text
	}
	out, err := sv.exec(ctx, sv.set.CommandTimeout, shArgv(m.start, args...), strings.NewReader(stdin))
	if err != nil {
		return fmt.Errorf("starting lane %s on %s: %w", l.Name, sv.host, err)
	}
	if strings.TrimSpace(string(out)) == "exited" {
		return &StartError{Lane: l.Name, Reason: fmt.Sprintf("exited as its unit %s started on %s (no main process)", unit, sv.host), Log: sv.procs.logTail(l.key())}
	}
	word, pidText, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	pid, err := strconv.Atoi(pidText)
	if err != nil || (word != "started" && word != "running") {
		return fmt.Errorf("starting lane %s on %s: unexpected answer %q", l.Name, sv.host, out)
	}
	if word == "running" {
		stopping, err := sv.stopping(ctx, l, pid)
		if err != nil {
			return fmt.Errorf("starting lane %s on %s: %w", l.Name, sv.host, err)
		}
		if stopping {
			if progress != nil {
				progress(fmt.Sprintf("lane %s: pid %d on %s is the lane's own process but no longer listens on port %d (told to stop by an apply that was cut off): killing it and starting the lane again", l.Name, pid, sv.host, l.Port))
			}
			sv.disown(l, m, unit, true, pid)
			if id, err := sv.procs.identity(ctx, pid, l); err != nil || id.alive {
				return &StartError{Lane: l.Name, Reason: fmt.Sprintf("its stopping process (pid %d) on %s outlived a SIGKILL", pid, sv.host), Log: sv.procs.logTail(l.key())}
			}
			return sv.launchMeta(ctx, l, meta, argv, progress)
		}
	}
	if progress != nil {
		progress(fmt.Sprintf("lane %s %s as pid %d on %s, waiting for /health", l.Name, word, pid, sv.host))
	}
	if err := sv.waitReady(ctx, l, pid); err != nil {
		var held *PortHeldError
		if errors.As(err, &held) {
			sv.disown(l, m, unit, word == "started", pid)
		}
		return err
	}
	if progress != nil {
		progress(fmt.Sprintf("lane %s serves %s on port %d", l.Name, l.Model, l.Port))
	}
	return nil
}

// stoppingGrace is how long a lane's process found running must stay
// alive without listening on its port before a start takes it for one
// that is stopping: llama-server listens before it loads, so only a
// process that has just been exec'd, or one told to stop, does not.
const stoppingGrace = 3 * time.Second

// stopping reports whether process pid, found running under lane l's
// pidfile, is the lane's own server (its command line says so, so a
// reused pid is never taken for it) that does not listen on l's port
// while nothing else does, through stoppingGrace: a lane signalled to
// stop by an apply that was then killed. llama-server closes its port at
// once on SIGTERM and may live a minute more; no start can wait that out.
func (sv *supervisor) stopping(ctx context.Context, l Lane, pid int) (bool, error) {
	deadline := time.Now().Add(stoppingGrace)
	for {
		id, err := sv.procs.identity(ctx, pid, l)
		var held *PortHeldError
		switch {
		case errors.As(err, &held):
			return false, nil // waitReady names the holder
		case err != nil:
			return false, err
		case !id.alive || id.listening || id.unseen:
			return false, nil
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(sv.set.Poll):
		}
	}
	st, err := sv.procs.status(ctx)
	if err != nil {
		return false, err
	}
	rec, ok := st.lane(l)
	return ok && rec.pid == pid && rec.isLane(l), nil
}

// disown forgets the files of lane l, whose process (pid) is not the one
// holding its port, so that nothing records it as running: a process
// this start launched is killed first (with its unit); one it found
// running, named by a pidfile it did not write, is left alone.
func (sv *supervisor) disown(l Lane, m serviceManager, unit string, launched bool, pid int) {
	// The step may be cancelled already: the clean-up has its own bound.
	ctx, cancel := context.WithTimeout(context.Background(), sv.set.CommandTimeout)
	defer cancel()
	if launched {
		sv.run(ctx, scriptSignal, "KILL", strconv.Itoa(pid))
	}
	sv.run(ctx, m.forget, sv.set.StateDir, l.key(), unit)
}

// unitFile renders the unit of u under manager m: the state directory
// and the executable resolved to absolute paths on the node first.
func (sv *supervisor) unitFile(ctx context.Context, m serviceManager, u unitSpec) (string, error) {
	out, err := sv.run(ctx, scriptResolve, sv.set.StateDir, u.Argv[0])
	if err != nil {
		return "", err
	}
	dir, bin, err := parseResolve(out)
	if err != nil {
		return "", err
	}
	u.Argv = append([]string{bin}, u.Argv[1:]...)
	u.Log = unitLog(dir, u.Lane)
	return m.render(u)
}

// waitReady polls the lane until it serves, its process exits or the
// start timeout passes. Before each /health and after the last, the
// process must be alive and no other process may hold the lane's port
// (a *PortHeldError names it); /health 200 counts only once the process
// itself listens there.
func (sv *supervisor) waitReady(ctx context.Context, l Lane, pid int) error {
	timeout := sv.set.startTimeout(l.SizeBytes)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := sv.prober(l)
	last := "no answer yet"
	for {
		id, err := sv.procs.identity(ctx, pid, l)
		var held *PortHeldError
		switch {
		case errors.As(err, &held):
			return held
		case err != nil:
			if ctx.Err() == nil {
				last = err.Error()
			}
		case !id.alive:
			return &StartError{Lane: l.Name, Reason: fmt.Sprintf("exited while loading on %s (pid %d)", sv.host, pid), Log: sv.procs.logTail(l.key())}
		case id.unseen && !id.listening:
			last = id.notListening(pid, l)
		}
		code, body, err := p.get(ctx, "/health")
		switch {
		case err == nil && code == http.StatusOK && id.listening:
			if err := sv.checkServes(ctx, p, l); err != nil {
				return err
			}
			return sv.stillOwns(ctx, pid, l)
		case err == nil && code == http.StatusOK:
			last = fmt.Sprintf("200, but pid %d is not yet seen listening on port %d", pid, l.Port)
		case err == nil && code == http.StatusServiceUnavailable:
			last = "503 (loading)"
		case err == nil:
			last = fmt.Sprintf("%d %s", code, strings.TrimSpace(string(body)))
		case ctx.Err() == nil:
			// A probe cut by the start timeout tells nothing: the last
			// answer the lane gave stays the one reported.
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return &StartError{Lane: l.Name, Reason: fmt.Sprintf("did not answer /health 200 within %s on %s (last: %s)", timeout, sv.host, last), Log: sv.procs.logTail(l.key())}
			}
			return ctx.Err()
		case <-time.After(sv.set.Poll):
		}
	}
}

// stillOwns checks, after the lane answered, that process pid is alive
// and alone holds lane l's port.
func (sv *supervisor) stillOwns(ctx context.Context, pid int, l Lane) error {
	id, err := sv.procs.identity(ctx, pid, l)
	switch {
	case err != nil:
		return err
	case !id.alive:
		return &StartError{Lane: l.Name, Reason: fmt.Sprintf("answered, but its process (pid %d) on %s has exited", pid, sv.host), Log: sv.procs.logTail(l.key())}
	case !id.listening:
		return &StartError{Lane: l.Name, Reason: fmt.Sprintf("answered, but on %s %s", sv.host, id.notListening(pid, l)), Log: sv.procs.logTail(l.key())}
	}
	return nil
}

// checkServes verifies that a healthy lane serves its model under every alias.
func (sv *supervisor) checkServes(ctx context.Context, p prober, l Lane) error {
	// A router serves no single file (its /props wants ?model=).
	var pr props
	if l.Name != RouterLane {
		if err := p.getJSON(ctx, "/props", &pr); err != nil {
			return fmt.Errorf("lane %s on %s: %w", l.Name, sv.host, err)
		}
	}
	if l.Name != RouterLane && pr.ModelPath != l.Model {
		return fmt.Errorf("lane %s on %s: port %d serves %s, not %s (another process holds the port?)", l.Name, sv.host, l.Port, pr.ModelPath, l.Model)
	}
	names, err := p.modelNames(ctx)
	if err != nil {
		return fmt.Errorf("lane %s on %s: %w", l.Name, sv.host, err)
	}
	for _, a := range l.Aliases {
		if !names[a] {
			return fmt.Errorf("lane %s on %s: /v1/models does not list alias %q", l.Name, sv.host, a)
		}
	}
	return nil
}

// setResidency carries out Node.SetResidency.
func (sv *supervisor) setResidency(ctx context.Context, l Lane) error {
	st, err := sv.procs.status(ctx)
	if err != nil {
		return err
	}
	r, ok := st.lane(l)
	if !ok || !r.isLane(l) {
		return fmt.Errorf("lane %s does not run on port %d of %s: its residency cannot change in place", l.Name, l.Port, sv.host)
	}
	meta := r.meta
	meta.Residency = l.Residency
	line, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	if _, err := sv.exec(ctx, sv.set.CommandTimeout, shArgv(scriptWriteFile, path.Join(sv.set.StateDir, r.name+".json")), strings.NewReader(string(line)+"\n")); err != nil {
		return fmt.Errorf("recording lane %s's residency on %s: %w", l.Name, sv.host, err)
	}
	return nil
}

// stop carries out Node.Stop.
func (sv *supervisor) stop(ctx context.Context, l Lane, progress Progress) error {
	if err := l.Validate(); err != nil {
		return err
	}
	st, err := sv.procs.status(ctx)
	if err != nil {
		return err
	}
	rec, ok := st.lane(l)
	key := l.key()
	if ok {
		key = rec.name
	}
	m, err := sv.set.manager()
	if err != nil {
		return err
	}
	unit := m.unit(key)
	if !ok || !rec.alive || !rec.isLane(l) {
		if ok && progress != nil {
			progress(fmt.Sprintf("lane %s is not running (%s); forgetting its pidfile", l.Name, rec.describe()))
		}
		_, err := sv.run(ctx, m.forget, sv.set.StateDir, key, unit)
		return err
	}
	if err := sv.drain.drain(ctx, l, progress); err != nil {
		var dte *DrainTimeoutError
		if !errors.As(err, &dte) {
			return err
		}
		if progress != nil {
			progress(err.Error() + "; stopping anyway")
		}
	}
	pid := strconv.Itoa(rec.pid)
	if m.render != nil {
		// The manager sends SIGTERM, then SIGKILL after StopGrace (the
		// unit's stop timeout), and returns once the unit is down.
		if _, err := sv.run(ctx, m.stop, unit); err != nil {
			return err
		}
	}
	// Without a manager, and for a process the manager did not run (one
	// started before service_manager changed), poolc signals it itself.
	if alive, err := sv.procs.alive(ctx, pid); err != nil || alive {
		if m.render != nil && progress != nil {
			progress(fmt.Sprintf("lane %s (pid %s) is not the process of unit %s; signalling it", l.Name, pid, unit))
		}
		if err := sv.procs.signalStop(ctx, l, pid, progress); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	_, err = sv.run(ctx, m.forget, sv.set.StateDir, key, unit)
	return err
}
