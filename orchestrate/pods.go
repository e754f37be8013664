package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/plugins/kube"
	"poolc.dev/poolc/plugins/kube/launch"
	"poolc.dev/poolc/pools"
)

// PodsRunRequest asks to launch copies of one Job on a pod pool, each on
// the first member in priority order with room for it.
type PodsRunRequest struct {
	// Config is the loaded configuration.
	Config *compiler.Config
	// Pool names the pod pool; "" is the pool's only one.
	Pool string
	// File is a Job manifest; without it the Job is one container of the
	// pod pool's image running Command.
	File    string
	Command []string
	// Count is how many copies are launched, concurrently.
	Count int
	// Timeout bounds the wait for room.
	Timeout time.Duration
	// Kubeconfig overrides the cluster plugin's kubeconfig.
	Kubeconfig string
	// Skipped sees the members the Job cannot run on (no verified copy
	// of its image), each with why, before any launch.
	Skipped func(reasons []string)
	// Placed sees each Job placed, as it is; Progress receives the lines
	// of launches waiting for room. Neither is called concurrently with
	// itself or the other.
	Placed   func(Placed)
	Progress io.Writer
}

// Placed is a Job placed: where, past which full members, after how long.
type Placed = launch.Placed

// RunPods launches the Jobs of req concurrently and returns when each is
// placed, or failed; the error counts the Jobs not placed.
func RunPods(ctx context.Context, req PodsRunRequest) error {
	pps, err := pickPodPools(req.Config.Pool, req.Pool, true)
	if err != nil {
		return err
	}
	pp := pps[0]
	var job *batchv1.Job
	if req.File != "" {
		doc, err := os.ReadFile(req.File)
		if err != nil {
			return err
		}
		if job, err = launch.ParseJob(doc); err != nil {
			return fmt.Errorf("%s: %w", req.File, err)
		}
	} else {
		if pp.Image == "" {
			return fmt.Errorf("pod pool %s has no image; give a Job manifest with -f", pp.Name)
		}
		job = launch.CommandJob(pp.Image, req.Command)
	}
	k, err := podPoolKubeconfig(req.Config, pp, req.Kubeconfig)
	if err != nil {
		return err
	}
	members, err := PodMembers(req.Config, pp)
	if err != nil {
		return err
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	if _, skipped := launch.Runnable(members, job); len(skipped) > 0 && req.Skipped != nil {
		req.Skipped(skipped)
	}
	opts := launch.Options{Timeout: req.Timeout, Progress: &lockedWriter{w: req.Progress, mu: &mu}}
	for range req.Count {
		wg.Go(func() {
			placed, err := launch.Submit(ctx, k, members, job, opts)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			if req.Placed != nil {
				req.Placed(placed)
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%d of %s not placed: %w", len(errs), plural.Count(req.Count, "Job"), errors.Join(errs...))
	}
	return nil
}

// lockedWriter serialises the progress lines of concurrent launches with
// their results.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return len(p), nil
	}
	return l.w.Write(p)
}

// MemberStatus is one pod-pool member's Jobs against its capacity; Used
// is meaningful only when Counted. Err says why the member could not be
// read.
type MemberStatus struct {
	Pool      string `json:"pool"`
	Context   string `json:"context"`
	Namespace string `json:"namespace"`
	Used      int64  `json:"used"`
	Capacity  int64  `json:"capacity"`
	Counted   bool   `json:"counted"`
	Error     string `json:"error,omitempty"`
}

// PodsStatus reads the Job quota of each member of the named pod pool
// ("" for all), in priority order. ok is false when a member could not
// be read (its row says why).
func PodsStatus(ctx context.Context, cfg *compiler.Config, pool, kubeconfig string) (rows []MemberStatus, ok bool, err error) {
	pps, err := pickPodPools(cfg.Pool, pool, false)
	if err != nil {
		return nil, false, err
	}
	ok = true
	for _, pp := range pps {
		k, err := podPoolKubeconfig(cfg, pp, kubeconfig)
		if err != nil {
			return nil, false, err
		}
		for _, u := range launch.Use(ctx, k, kube.Members(pp)) {
			r := MemberStatus{Pool: pp.Name, Context: u.Context, Namespace: u.Namespace, Used: u.Used, Capacity: u.Capacity, Counted: u.Counted}
			if u.Err != nil {
				r.Error, ok = u.Err.Error(), false
			}
			rows = append(rows, r)
		}
	}
	return rows, ok, nil
}

// podPoolKubeconfig loads the kubeconfig of pod pool pp: flag when set,
// else the one its cluster plugin reads (kube.PodPoolKubeconfig).
func podPoolKubeconfig(cfg *compiler.Config, pp pools.PodPool, flag string) (*kube.Kubeconfig, error) {
	if flag == "" {
		flag = kube.PodPoolKubeconfig(cfg.Pool, pp, cfg.Dir())
	}
	return kube.LoadKubeconfig(flag)
}

// pickPodPools is the named pod pool, or every one (only one, when one
// is wanted and none is named).
func pickPodPools(p *pools.Pool, name string, one bool) ([]pools.PodPool, error) {
	if name != "" {
		pp := p.PodPool(name)
		if pp == nil {
			return nil, fmt.Errorf("pool %s has no pod pool %q", p.Name, name)
		}
		return []pools.PodPool{*pp}, nil
	}
	switch {
	case len(p.PodPools) == 0:
		return nil, fmt.Errorf("pool %s has no pod pools", p.Name)
	case one && len(p.PodPools) > 1:
		names := make([]string, 0, len(p.PodPools))
		for _, pp := range p.PodPools {
			names = append(names, pp.Name)
		}
		return nil, fmt.Errorf("pool %s has %d pod pools (%s); name one with --pool", p.Name, len(names), strings.Join(names, ", "))
	}
	return p.PodPools, nil
}
