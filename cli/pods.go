package cli

import (
	"context"
	"os"
	"os/signal"

	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/cli/views"
	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/orchestrate"
)

const podsRunHelp = `Creates a Job on the pod pool's first member, in priority order, with
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

Exit codes: 0 every Job placed, 1 an error or the timeout.`

const podsStatusHelp = `Reads each member's Job quota from its API server and prints, in
priority order, the Jobs it holds against its capacity:

  POOL     CONTEXT      NAMESPACE  USED  CAPACITY
  harness  pool-node-b  harness    3     8

USED is "?" until the quota controller has counted the quota, and the
row says why when a member cannot be read. The kubeconfig is the one
the pod pool's cluster plugin reads, as for poolc pods run. With --format json one
document goes to standard output:

  {"members": [{"pool": "harness", "context": "pool-node-b",
    "namespace": "harness", "used": 3, "capacity": 8, "counted": true}]}

Exit codes: 0 every member read, 1 an error or a member unreadable.`

func runPodsRun(a *arguments.PodsRun, io Stdio) int {
	err := a.Check()
	var cfg *compiler.Config
	if err == nil {
		cfg, err = loadPodPools(a.Paths)
	}
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		err = orchestrate.RunPods(ctx, orchestrate.PodsRunRequest{
			Config: cfg, Pool: a.Pool, File: a.File, Command: a.Command,
			Count: a.Count, Timeout: a.Timeout, Kubeconfig: a.Kubeconfig,
			Skipped:  func(reasons []string) { views.PodsSkipped(io.Err, reasons) },
			Placed:   func(p orchestrate.Placed) { views.Placed(io.Out, p) },
			Progress: io.Err,
		})
	}
	if err != nil {
		return fail(io, "pods run", err.Error())
	}
	return ExitOK
}

func loadPodPools(paths []string) (*compiler.Config, error) {
	cfg, diags := compiler.Load(paths)
	if diags.HasErrors() {
		return nil, diags.Err()
	}
	return cfg, nil
}

func runPodsStatus(a *arguments.PodsStatus, io Stdio) int {
	ok, err := podsStatus(a, io)
	if err != nil {
		return fail(io, "pods status", err.Error())
	}
	if !ok {
		return ExitError
	}
	return ExitOK
}

func podsStatus(a *arguments.PodsStatus, io Stdio) (bool, error) {
	if err := a.Check(); err != nil {
		return false, err
	}
	cfg, err := loadPodPools(a.Paths.Paths)
	if err != nil {
		return false, err
	}
	rows, ok, err := orchestrate.PodsStatus(context.Background(), cfg, a.Pool, a.Kubeconfig)
	if err != nil {
		return false, err
	}
	if a.Format == "json" {
		return ok, views.PodsStatusJSON(io.Out, rows)
	}
	return ok, views.PodsStatus(io.Out, rows)
}
