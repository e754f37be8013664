package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	batchv1 "k8s.io/api/batch/v1"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/orchestrate"
	"poolc.dev/poolc/plugins/kube"
	"poolc.dev/poolc/plugins/kube/launch"
	"poolc.dev/poolc/pools"
)

func init() {
	register(&command{
		name:    "pods run",
		args:    "[PATH...] (-f JOB.yaml | -- COMMAND [ARG...])",
		summary: "launch Jobs on a pod pool, on the first member with room",
		help: `Creates a Job on the pod pool's first member, in priority order, with
room for it. A launcher admits a Job to a member while holding the
member's admission Lease (poolc-admission, taken by compare-and-swap):
it counts the pool's unfinished Jobs there with a consistent list and
creates the Job only when they are fewer than the member's capacity, so
launchers on every host, racing, never over-fill a member. The
ResourceQuota poolc apply set up (count/jobs.batch = the capacity)
stays the backstop for Jobs made without poolc. A full member sends the
Job to the next one. When every member is full the launcher waits,
printing a progress line to standard error every 10s, until one has
room or --timeout passes.

The Job is the manifest given with -f, or one container running COMMAND
in the pod pool's image. It gets the pool's labels, a generated name
(POOL-xxxxx) unless the manifest names it, and ttlSecondsAfterFinished=0
unless the manifest sets one: the quota counts a Job until it is
deleted, so a finished Job is deleted at once to free its slot.

In a pod pool with an image_sync plugin, a Job running the pool's image
goes only to members whose registry the state records as holding it,
as an image-sync read it back from there: its containers of that image
run the registry's copy, k3d-NAME:PORT/REPOSITORY@sha256:..., whatever
the image's tag names now. A member without a verified copy (its sync
failed or never ran) is skipped, with a line on standard error saying
which and why, and the Job goes to another member with room.

The kubeconfig is the one the pod pool's cluster plugin reads (its
config block's kubeconfig, relative to the pool's directory), else
$KUBECONFIG, else ~/.kube/config; --kubeconfig overrides it.

Each Job placed is one line on standard output:

  placed context=pool-node-b namespace=harness job=harness-7xk2p refused=- waited=0s

refused lists the members that were full on the attempt that placed it.

Examples:
  poolc pods run --pool harness pools/ -- python run.py --task 12
  poolc pods run -f eval-job.yaml --count 20 --timeout 30m

Exit codes: 0 every Job placed, 1 an error or the timeout.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			pool := fs.String("pool", "", "the pod pool (default: the pool's only one)")
			file := fs.StringP("file", "f", "", "a Job manifest (YAML or JSON) to launch")
			count := fs.Int("count", 1, "how many copies of the Job to launch, concurrently")
			timeout := fs.Duration("timeout", launch.DefaultTimeout, "how long to wait for room")
			kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: the cluster plugin's kubeconfig, then $KUBECONFIG, then ~/.kube/config)")
			return func(args []string, io Stdio) int {
				paths, command := args, []string(nil)
				if dash := fs.ArgsLenAtDash(); dash >= 0 {
					paths, command = args[:dash], args[dash:]
				}
				err := podsRun(paths, command, podsRunOptions{
					pool: *pool, file: *file, count: *count, timeout: *timeout, kubeconfig: *kubeconfig,
				}, io)
				if err != nil {
					fmt.Fprintf(io.Err, "poolc pods run: %v\n", err)
					return ExitError
				}
				return ExitOK
			}
		},
	})
	register(&command{
		name:    "pods status",
		args:    "[PATH...]",
		summary: "show each pod-pool member's Jobs in use against its capacity",
		help: `Reads each member's Job quota from its API server and prints, in
priority order, the Jobs it holds against its capacity:

  POOL     CONTEXT      NAMESPACE  USED  CAPACITY
  harness  pool-node-b  harness    3     8

USED is "?" until the quota controller has counted the quota, and the
row says why when a member cannot be read. The kubeconfig is the one
the pod pool's cluster plugin reads, as for poolc pods run. With --format json one
document goes to standard output:

  {"members": [{"pool": "harness", "context": "pool-node-b",
    "namespace": "harness", "used": 3, "capacity": 8, "counted": true}]}

Exit codes: 0 every member read, 1 an error or a member unreadable.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			pool := fs.String("pool", "", "only this pod pool (default: all)")
			format := fs.String("format", "text", "output format: text or json")
			kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: the cluster plugin's kubeconfig, then $KUBECONFIG, then ~/.kube/config)")
			return func(args []string, io Stdio) int {
				ok, err := podsStatus(args, *pool, *format, *kubeconfig, io)
				if err != nil {
					fmt.Fprintf(io.Err, "poolc pods status: %v\n", err)
					return ExitError
				}
				if !ok {
					return ExitError
				}
				return ExitOK
			}
		},
	})
}

type podsRunOptions struct {
	pool, file, kubeconfig string
	count                  int
	timeout                time.Duration
}

func podsRun(paths, command []string, o podsRunOptions, io Stdio) error {
	if o.count < 1 {
		return fmt.Errorf("--count %d: want at least 1", o.count)
	}
	if (o.file == "") == (len(command) == 0) {
		return errors.New("give a Job manifest with -f or a command after --, not both")
	}
	cfg, err := loadPodPools(paths)
	if err != nil {
		return err
	}
	pps, err := pickPodPools(cfg.Pool, o.pool, true)
	if err != nil {
		return err
	}
	pp := pps[0]
	var job *batchv1.Job
	if o.file != "" {
		doc, err := os.ReadFile(o.file)
		if err != nil {
			return err
		}
		if job, err = launch.ParseJob(doc); err != nil {
			return fmt.Errorf("%s: %w", o.file, err)
		}
	} else {
		if pp.Image == "" {
			return fmt.Errorf("pod pool %s has no image; give a Job manifest with -f", pp.Name)
		}
		job = launch.CommandJob(pp.Image, command)
	}
	k, err := podPoolKubeconfig(cfg, pp, o.kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	members, err := orchestrate.PodMembers(cfg, pp)
	if err != nil {
		return err
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	if _, skipped := launch.Runnable(members, job); len(skipped) > 0 {
		fmt.Fprintf(io.Err, "poolc pods run: %s\n", strings.Join(skipped, "\npoolc pods run: "))
	}
	opts := launch.Options{Timeout: o.timeout, Progress: &lockedWriter{w: io.Err, mu: &mu}}
	for range o.count {
		wg.Go(func() {
			placed, err := launch.Submit(ctx, k, members, job, opts)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			refused := strings.Join(placed.Refused, ",")
			if refused == "" {
				refused = "-"
			}
			fmt.Fprintf(io.Out, "placed context=%s namespace=%s job=%s refused=%s waited=%s\n",
				placed.Context, placed.Namespace, placed.Job, refused, placed.Waited.Round(time.Millisecond))
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%d of %s not placed: %w", len(errs), plural.Count(o.count, "Job"), errors.Join(errs...))
	}
	return nil
}

// lockedWriter serialises the progress lines of concurrent launches with
// their result lines.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func loadPodPools(paths []string) (*compiler.Config, error) {
	cfg, diags := compiler.Load(paths)
	if diags.HasErrors() {
		return nil, diags.Err()
	}
	return cfg, nil
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

type memberStatusJSON struct {
	Pool      string `json:"pool"`
	Context   string `json:"context"`
	Namespace string `json:"namespace"`
	Used      int64  `json:"used"`
	Capacity  int64  `json:"capacity"`
	Counted   bool   `json:"counted"`
	Error     string `json:"error,omitempty"`
}

func podsStatus(paths []string, pool, format, kubeconfig string, io Stdio) (bool, error) {
	if format != "text" && format != "json" {
		return false, fmt.Errorf("--format %q: want text or json", format)
	}
	cfg, err := loadPodPools(paths)
	if err != nil {
		return false, err
	}
	pps, err := pickPodPools(cfg.Pool, pool, false)
	if err != nil {
		return false, err
	}
	ctx := context.Background()
	var rows []memberStatusJSON
	ok := true
	for _, pp := range pps {
		k, err := podPoolKubeconfig(cfg, pp, kubeconfig)
		if err != nil {
			return false, err
		}
		for _, u := range launch.Use(ctx, k, kube.Members(pp)) {
			r := memberStatusJSON{Pool: pp.Name, Context: u.Context, Namespace: u.Namespace, Used: u.Used, Capacity: u.Capacity, Counted: u.Counted}
			if u.Err != nil {
				r.Error, ok = u.Err.Error(), false
			}
			rows = append(rows, r)
		}
	}
	if format == "json" {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		return ok, enc.Encode(map[string]any{"members": rows})
	}
	tw := tabwriter.NewWriter(io.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tCONTEXT\tNAMESPACE\tUSED\tCAPACITY")
	for _, r := range rows {
		used := fmt.Sprint(r.Used)
		if !r.Counted {
			used = "?"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%d", r.Pool, r.Context, r.Namespace, used, r.Capacity)
		if r.Error != "" {
			line = fmt.Sprintf("%s\t%s\t%s\t-\t-\t%s", r.Pool, r.Context, r.Namespace, r.Error)
		}
		fmt.Fprintln(tw, line)
	}
	return ok, tw.Flush()
}
