package arguments

import (
	"time"

	"github.com/spf13/pflag"
)

// State is the flag of the commands that work on a pool's state.
type State struct {
	// State is the state file; "" is the backend of the pool's state
	// block.
	State string
}

func (s *State) flags(fs *pflag.FlagSet) {
	fs.StringVar(&s.State, "state", "", "state file (default: the pool's own backend, from its configuration)")
}

// StateShow is poolc state show [PATH...].
type StateShow struct {
	Paths
	State
	Format string
}

// Flags declares state show's flags.
func (a *StateShow) Flags(fs *pflag.FlagSet) {
	a.State.flags(fs)
	fs.StringVar(&a.Format, "format", "text", "output format: text or json")
}

// StateList is poolc state list [PATH...].
type StateList struct {
	Paths
	State
}

// Flags declares --state.
func (a *StateList) Flags(fs *pflag.FlagSet) { a.State.flags(fs) }

// ForceUnlock is poolc force-unlock LOCK_ID [PATH...].
type ForceUnlock struct {
	LockID string
	Paths  []string
	State
}

// Flags declares --state.
func (a *ForceUnlock) Flags(fs *pflag.FlagSet) { a.State.flags(fs) }

// Positional takes the LOCK_ID and the paths.
func (a *ForceUnlock) Positional(args []string, _ int) error {
	var err error
	a.LockID, a.Paths, err = first(args, "want the LOCK_ID")
	return err
}

// Copy are the flags of state push and state pull.
type Copy struct {
	// Force copies over a state of another lineage or a later serial.
	Force       bool
	LockTimeout time.Duration
}

func (c *Copy) flags(fs *pflag.FlagSet) {
	fs.BoolVar(&c.Force, "force", false, "copy over a state of another lineage or a later serial")
	fs.DurationVar(&c.LockTimeout, "lock-timeout", 0, "wait this long for a lock another command holds (0: fail at once)")
}

// StatePush is poolc state push FILE [PATH...].
type StatePush struct {
	File  string
	Paths []string
	Copy
}

// Flags declares state push's flags.
func (a *StatePush) Flags(fs *pflag.FlagSet) { a.Copy.flags(fs) }

// Positional takes the FILE and the paths.
func (a *StatePush) Positional(args []string, _ int) error {
	var err error
	a.File, a.Paths, err = first(args, "want the FILE to push")
	return err
}

// StatePull is poolc state pull [--out FILE] [PATH...].
type StatePull struct {
	Paths
	Copy
	// Out is the state file to copy into; "" prints the state.
	Out string
}

// Flags declares state pull's flags.
func (a *StatePull) Flags(fs *pflag.FlagSet) {
	a.Copy.flags(fs)
	fs.StringVar(&a.Out, "out", "", "copy the state into this state file instead of printing it")
}
