package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/cli/views"
	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/membership"
	"poolc.dev/poolc/pools"
)

// withRegistry loads the configuration at paths and runs f on its pool's
// membership, which lives in the etcd of its state block.
func withRegistry(paths []string, io Stdio, name string, f func(*compiler.Config, *membership.Registry) error) int {
	cfg, diags := compiler.Load(paths)
	if diags.HasErrors() {
		writeDiagnostics(io, diags)
		return ExitError
	}
	err := func() error {
		r, closeRegistry, err := membership.Open(cfg.Pool, cfg.Dir())
		if err != nil {
			return err
		}
		defer closeRegistry()
		return f(cfg, r)
	}()
	if err != nil {
		return fail(io, name, err.Error())
	}
	return ExitOK
}

const nodeTokenCreateHelp = `Prints a token that enrolls node NAME in the pool's membership once, until
--ttl has passed. The token is printed once, on stdout, and never stored:
etcd keeps only its hash. Pass it to "poolc node join" on that node (by
the POOLC_JOIN_TOKEN environment variable rather than --token, which
other users of the node can see). Only a token bound to a node enrolls it,
also again.

Examples:
  T=$(poolc node token create --node spark-node-03 pools/)

Exit codes: 0 issued, 1 an error.`

const nodeJoinHelp = `Enrolls this machine as node NAME (default: its host name) with a token
from "poolc node token create --node NAME", read from --token or, better,
the POOLC_JOIN_TOKEN environment variable. The token is used up. The
node's agent credential is written to --credential (default: poolc's
directory in the user's config directory), readable by its owner only;
then run "poolc node agent" on this machine.

Exit codes: 0 enrolled, 1 a token that is unknown, used, expired or bound
to another node, or an error.`

const nodeAgentHelp = `Runs until stopped (SIGTERM, Ctrl-C), on a node enrolled by "poolc node
join": keeps a lease in etcd alive with heartbeats and publishes, every
--interval, the node's memory (total and available) and its llama-server
processes. The planner takes the node as up while the lease lives: if the
agent dies, the node is down lease_ttl seconds (the state block's) after
its last heartbeat, and the next plan moves its lanes. A stopped agent
ends its lease at once.

Run it under the node's service manager, restarting it when it exits.

Exit codes: 1 an error (the lease ended under it, or the node left the
pool); 0 stopped by a signal.`

const nodeListHelp = `Prints one line per enrolled node: its name, up or down (whether its
agent's lease lives), its cordon, its memory total and available in GB,
the number of llama-server processes it runs, and the age of its last
report. --json prints the same as a JSON array.

Exit codes: 0 success, 1 an error.`

const nodeLeaveHelp = `Removes node NAME from the pool's membership: its enrolment and its
agent's lease (the agent stops). The node must be drained first ("poolc
node drain NAME", then apply), so that no lane is lost; afterwards the
planner takes its liveness from the state again, so remove it from the
configuration too.

Exit codes: 0 removed, 1 a node not drained or not enrolled, or an error.`

func runNodeTokenCreate(a *arguments.NodeTokenCreate, io Stdio) int {
	return withRegistry(a.Paths.Paths, io, "node token create", func(cfg *compiler.Config, r *membership.Registry) error {
		tok, exp, err := r.CreateNodeToken(context.Background(), cfg.Pool, a.Node, a.TTL, time.Now())
		if err != nil {
			return err
		}
		views.NodeToken(io.Out, io.Err, a.Node, tok, exp)
		return nil
	})
}

func runNodeJoin(a *arguments.NodeJoin, io Stdio) int {
	return withRegistry(a.Paths.Paths, io, "node join", func(cfg *compiler.Config, r *membership.Registry) error {
		e, err := r.Enroll(context.Background(), membership.Enrolment{Pool: cfg.Pool, Token: a.Token, Node: a.Node, CredentialFile: a.Credential, Now: time.Now()})
		if err != nil {
			return err
		}
		views.NodeEnrolled(io.Out, e.Node, cfg.Pool.Name, e.CredentialFile)
		return nil
	})
}

func runNodeAgent(a *arguments.NodeAgent, io Stdio) int {
	return withRegistry(a.Paths.Paths, io, "node agent", func(cfg *compiler.Config, r *membership.Registry) error {
		agent, err := r.AgentFor(cfg.Pool, a.Credential, a.Interval, a.Proc)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return agent.Run(ctx, func() {
			views.NodeUp(io.Err, agent.Node, r.LeaseTTL(), a.Interval)
		})
	})
}

func runNodeList(a *arguments.NodeList, io Stdio) int {
	return withRegistry(a.Paths.Paths, io, "node list", func(_ *compiler.Config, r *membership.Registry) error {
		ms, err := r.Members(context.Background())
		if err != nil {
			return err
		}
		if a.JSON {
			return views.MembersJSON(io.Out, ms)
		}
		return views.Members(io.Out, ms, time.Now())
	})
}

const (
	nodeCordonHelp   = "The planner places no lane on node NAME that is not running there already: the lanes it runs stay." + nodeCordonExit
	nodeDrainHelp    = "The planner places no lane on node NAME: the next apply moves its lanes off, make-before-break." + nodeCordonExit
	nodeUncordonHelp = "Undoes cordon and drain: the planner places lanes on node NAME again." + nodeCordonExit
	nodeCordonExit   = "\n\nExit codes: 0 done, 1 a node not enrolled, or an error."
)

func runNodeCordon(a *arguments.NodeName, io Stdio) int {
	return setCordon(a, io, "cordon", pools.Cordoned)
}
func runNodeDrain(a *arguments.NodeName, io Stdio) int {
	return setCordon(a, io, "drain", pools.Drained)
}
func runNodeUncordon(a *arguments.NodeName, io Stdio) int { return setCordon(a, io, "uncordon", "") }

// setCordon sets the cordon of node a.Node in the membership.
func setCordon(a *arguments.NodeName, io Stdio, name string, c pools.Cordon) int {
	return withRegistry(a.Paths, io, "node "+name, func(_ *compiler.Config, r *membership.Registry) error {
		if err := r.SetCordon(context.Background(), a.Node, c); err != nil {
			return err
		}
		views.NodeCordon(io.Out, a.Node, c)
		return nil
	})
}

func runNodeLeave(a *arguments.NodeName, io Stdio) int {
	return withRegistry(a.Paths, io, "node leave", func(_ *compiler.Config, r *membership.Registry) error {
		if err := r.Leave(context.Background(), a.Node); err != nil {
			return err
		}
		views.NodeLeft(io.Out, a.Node)
		return nil
	})
}
