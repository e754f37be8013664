package arguments

import (
	"time"

	"github.com/spf13/pflag"

	"poolc.dev/poolc/membership"
)

// NodeTokenCreate is poolc node token create --node NAME [PATH...].
type NodeTokenCreate struct {
	Paths
	Node string
	TTL  time.Duration
}

// Flags declares node token create's flags.
func (a *NodeTokenCreate) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&a.Node, "node", "", "the node the token enrolls (required)")
	fs.DurationVar(&a.TTL, "ttl", membership.DefaultTokenTTL, "how long the token is valid")
}

// NodeJoin is poolc node join [PATH...].
type NodeJoin struct {
	Paths
	// Token is the enrolment token; "" reads membership.JoinTokenEnv.
	Token string
	// Node is this node's name; "" is the host name.
	Node string
	// Credential is where the credential goes; "" is the default
	// (membership.CredentialPath).
	Credential string
}

// Flags declares node join's flags.
func (a *NodeJoin) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&a.Token, "token", "", "the enrolment token (default: $"+membership.JoinTokenEnv+")")
	fs.StringVar(&a.Node, "node", "", "this node's name in the pool (default: the host name)")
	fs.StringVar(&a.Credential, "credential", "", "where to keep the node's agent credential")
}

// NodeAgent is poolc node agent [PATH...].
type NodeAgent struct {
	Paths
	Credential string
	Interval   time.Duration
	Proc       string
}

// Flags declares node agent's flags.
func (a *NodeAgent) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&a.Credential, "credential", "", "the node's agent credential, as node join wrote it")
	fs.DurationVar(&a.Interval, "interval", 5*time.Second, "how often the node's report is published")
	fs.StringVar(&a.Proc, "proc", "/proc", "the proc file system to read the node's memory and processes from")
}

// NodeList is poolc node list [PATH...].
type NodeList struct {
	Paths
	JSON bool
}

// Flags declares --json.
func (a *NodeList) Flags(fs *pflag.FlagSet) {
	fs.BoolVar(&a.JSON, "json", false, "print JSON")
}

// NodeName is NAME [PATH...]: node cordon, drain, uncordon and leave.
type NodeName struct {
	none
	Node  string
	Paths []string
}

// Positional takes the node's NAME and the paths.
func (a *NodeName) Positional(args []string, _ int) error {
	var err error
	a.Node, a.Paths, err = first(args, "want the node's NAME")
	return err
}
