package arguments

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"poolc.dev/poolc/plugins/kube/launch"
)

const kubeconfigUsage = "kubeconfig file (default: the cluster plugin's kubeconfig, then $KUBECONFIG, then ~/.kube/config)"

// PodsRun is poolc pods run [PATH...] (-f JOB.yaml | -- COMMAND...).
type PodsRun struct {
	Paths []string
	// Command is what follows --: the Job's one container's command.
	Command []string
	// Pool is the pod pool; "" is the pool's only one.
	Pool, File, Kubeconfig string
	Count                  int
	Timeout                time.Duration
}

// Flags declares pods run's flags.
func (a *PodsRun) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&a.Pool, "pool", "", "the pod pool (default: the pool's only one)")
	fs.StringVarP(&a.File, "file", "f", "", "a Job manifest (YAML or JSON) to launch")
	fs.IntVar(&a.Count, "count", 1, "how many copies of the Job to launch, concurrently")
	fs.DurationVar(&a.Timeout, "timeout", launch.DefaultTimeout, "how long to wait for room")
	fs.StringVar(&a.Kubeconfig, "kubeconfig", "", kubeconfigUsage)
}

// Positional splits the paths from the command after --.
func (a *PodsRun) Positional(args []string, dash int) error {
	a.Paths = args
	if dash >= 0 {
		a.Paths, a.Command = args[:dash], args[dash:]
	}
	return nil
}

// Check refuses what pods run cannot do: fewer than one Job, or a Job
// given both (or neither) as a manifest and as a command.
func (a *PodsRun) Check() error {
	if a.Count < 1 {
		return fmt.Errorf("--count %d: want at least 1", a.Count)
	}
	if (a.File == "") == (len(a.Command) == 0) {
		return errors.New("give a Job manifest with -f or a command after --, not both")
	}
	return nil
}

// PodsStatus is poolc pods status [PATH...].
type PodsStatus struct {
	Paths
	// Pool is the only pod pool shown; "" shows all.
	Pool, Format, Kubeconfig string
}

// Flags declares pods status's flags.
func (a *PodsStatus) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&a.Pool, "pool", "", "only this pod pool (default: all)")
	fs.StringVar(&a.Format, "format", "text", "output format: text or json")
	fs.StringVar(&a.Kubeconfig, "kubeconfig", "", kubeconfigUsage)
}

// Check refuses an unknown --format.
func (a *PodsStatus) Check() error {
	if a.Format != "text" && a.Format != "json" {
		return fmt.Errorf("--format %q: want text or json", a.Format)
	}
	return nil
}
