package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/internal/atomicfile"
	"poolc.dev/poolc/membership"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store/etcdstore"
)

// JoinTokenEnv is where node join finds its token when --token is not
// given: a command line is visible to every user of the machine.
const JoinTokenEnv = "POOLC_JOIN_TOKEN"

// withRegistry loads the configuration in args and runs f on its pool's
// membership, which lives in the etcd of its state block.
func withRegistry(args []string, io Stdio, name string, f func(*compiler.Config, *membership.Registry) error) int {
	cfg, diags := compiler.Load(args)
	if diags.HasErrors() {
		writeDiagnostics(io, diags)
		return ExitError
	}
	err := func() error {
		sb := cfg.Pool.State
		if sb.Backend != "etcd" {
			return fmt.Errorf(`pool %s keeps its state in a file: node membership lives in etcd; set state { backend = "etcd" endpoints = [...] }`, cfg.Pool.Name)
		}
		cli, err := etcdstore.Connect(sb, cfg.Dir())
		if err != nil {
			return err
		}
		defer cli.Close()
		return f(cfg, membership.New(cli, etcdstore.Prefix(sb, cfg.Pool.Name), etcdstore.TTL(sb)))
	}()
	if err != nil {
		fmt.Fprintf(io.Err, "poolc %s: %v\n", name, err)
		return ExitError
	}
	return ExitOK
}

// credentialFile is what node join leaves on the node for its agent.
type credentialFile struct {
	Pool       string `json:"pool"`
	Node       string `json:"node"`
	Credential string `json:"credential"`
}

// credentialPath is --credential, or the default for the pool.
func credentialPath(flag, pool string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no place for the node's credential (%v): pass --credential FILE", err)
	}
	return filepath.Join(dir, "poolc", "node-"+pool+".json"), nil
}

func init() {
	register(&command{
		name:    "node token create",
		args:    "--node NAME [PATH...]",
		summary: "issue a token that enrolls one node",
		help: `Prints a token that enrolls node NAME in the pool's membership once, until
--ttl has passed. The token is printed once, on stdout, and never stored:
etcd keeps only its hash. Pass it to "poolc node join" on that node (by
the POOLC_JOIN_TOKEN environment variable rather than --token, which
other users of the node can see). Only a token bound to a node enrolls it,
also again.

Examples:
  T=$(poolc node token create --node spark-node-03 pools/)

Exit codes: 0 issued, 1 an error.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			node := fs.String("node", "", "the node the token enrolls (required)")
			ttl := fs.Duration("ttl", membership.DefaultTokenTTL, "how long the token is valid")
			return func(args []string, io Stdio) int {
				return withRegistry(args, io, "node token create", func(cfg *compiler.Config, r *membership.Registry) error {
					if cfg.Pool.Node(*node) == nil {
						return fmt.Errorf("--node %q: no such node in pool %s", membership.Clean(*node), cfg.Pool.Name)
					}
					tok, exp, err := r.CreateToken(context.Background(), *node, *ttl, time.Now())
					if err != nil {
						return err
					}
					fmt.Fprintln(io.Out, tok)
					fmt.Fprintf(io.Err, "Token for node %s, single use, valid until %s. It is not shown again.\n", *node, exp.Format(time.RFC3339))
					return nil
				})
			}
		},
	})
	register(&command{
		name:    "node join",
		args:    "[--token T] [--node NAME] [PATH...]",
		summary: "enroll this machine as a node of the pool",
		help: `Enrolls this machine as node NAME (default: its host name) with a token
from "poolc node token create --node NAME", read from --token or, better,
the POOLC_JOIN_TOKEN environment variable. The token is used up. The
node's agent credential is written to --credential (default: poolc's
directory in the user's config directory), readable by its owner only;
then run "poolc node agent" on this machine.

Exit codes: 0 enrolled, 1 a token that is unknown, used, expired or bound
to another node, or an error.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			token := fs.String("token", "", "the enrolment token (default: $"+JoinTokenEnv+")")
			node := fs.String("node", "", "this node's name in the pool (default: the host name)")
			cred := fs.String("credential", "", "where to keep the node's agent credential")
			return func(args []string, io Stdio) int {
				return withRegistry(args, io, "node join", func(cfg *compiler.Config, r *membership.Registry) error {
					tok := *token
					if tok == "" {
						tok = os.Getenv(JoinTokenEnv)
					}
					if tok == "" {
						return fmt.Errorf("no token: set %s or pass --token", JoinTokenEnv)
					}
					name := *node
					if name == "" {
						host, err := os.Hostname()
						if err != nil {
							return fmt.Errorf("no host name (%v): pass --node", err)
						}
						name, _, _ = strings.Cut(host, ".")
					}
					if cfg.Pool.Node(name) == nil {
						return fmt.Errorf("node %q: no such node in pool %s; pass --node", membership.Clean(name), cfg.Pool.Name)
					}
					path, err := credentialPath(*cred, cfg.Pool.Name)
					if err != nil {
						return err
					}
					secret, err := r.Join(context.Background(), tok, name, time.Now())
					if err != nil {
						return err
					}
					data, _ := json.MarshalIndent(credentialFile{Pool: cfg.Pool.Name, Node: name, Credential: secret}, "", "  ")
					if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
						return err
					}
					if err := atomicfile.Write(path, append(data, '\n'), 0o600); err != nil {
						return fmt.Errorf("writing the credential (the node is enrolled; join again with a new token): %w", err)
					}
					fmt.Fprintf(io.Out, "Enrolled node %s in pool %s; its credential is in %s. Run poolc node agent on it.\n", name, cfg.Pool.Name, path)
					return nil
				})
			}
		},
	})
	register(&command{
		name:    "node agent",
		args:    "[PATH...]",
		summary: "keep this node's lease alive and report what it runs",
		help: `Runs until stopped (SIGTERM, Ctrl-C), on a node enrolled by "poolc node
join": keeps a lease in etcd alive with heartbeats and publishes, every
--interval, the node's memory (total and available) and its llama-server
processes. The planner takes the node as up while the lease lives: if the
agent dies, the node is down lease_ttl seconds (the state block's) after
its last heartbeat, and the next plan moves its lanes. A stopped agent
ends its lease at once.

Run it under the node's service manager, restarting it when it exits.

Exit codes: 1 an error (the lease ended under it, or the node left the
pool); 0 stopped by a signal.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			cred := fs.String("credential", "", "the node's agent credential, as node join wrote it")
			interval := fs.Duration("interval", 5*time.Second, "how often the node's report is published")
			proc := fs.String("proc", "/proc", "the proc file system to read the node's memory and processes from")
			return func(args []string, io Stdio) int {
				return withRegistry(args, io, "node agent", func(cfg *compiler.Config, r *membership.Registry) error {
					path, err := credentialPath(*cred, cfg.Pool.Name)
					if err != nil {
						return err
					}
					data, err := os.ReadFile(path)
					if err != nil {
						return fmt.Errorf("reading the credential: %w (run poolc node join first)", err)
					}
					var c credentialFile
					if err := json.Unmarshal(data, &c); err != nil || c.Credential == "" {
						return fmt.Errorf("%s: not a node credential", path)
					}
					if c.Pool != cfg.Pool.Name {
						return fmt.Errorf("%s is the credential of a node of pool %s, not %s", path, c.Pool, cfg.Pool.Name)
					}
					if *interval <= 0 {
						return errors.New("--interval must be positive")
					}
					ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
					defer stop()
					a := &membership.Agent{Registry: r, Node: c.Node, Credential: c.Credential, Interval: *interval, Sample: membership.Sampler{Proc: *proc}.Sample}
					return a.Run(ctx, func() {
						fmt.Fprintf(io.Err, "Node %s is up: its lease lives %ds past each heartbeat; reporting every %v.\n", c.Node, etcdstore.TTL(cfg.Pool.State), *interval)
					})
				})
			}
		},
	})
	register(&command{
		name:    "node list",
		args:    "[PATH...]",
		summary: "list the enrolled nodes, up or down, and what they report",
		help: `Prints one line per enrolled node: its name, up or down (whether its
agent's lease lives), its cordon, its memory total and available in GB,
the number of llama-server processes it runs, and the age of its last
report. --json prints the same as a JSON array.

Exit codes: 0 success, 1 an error.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			asJSON := fs.Bool("json", false, "print JSON")
			return func(args []string, io Stdio) int {
				return withRegistry(args, io, "node list", func(cfg *compiler.Config, r *membership.Registry) error {
					ms, err := r.Members(context.Background())
					if err != nil {
						return err
					}
					if *asJSON {
						type row struct {
							Name   string             `json:"name"`
							Up     bool               `json:"up"`
							Cordon pools.Cordon       `json:"cordon,omitempty"`
							Report *membership.Report `json:"report,omitempty"`
						}
						rows := []row{}
						for _, m := range ms {
							rows = append(rows, row{m.Name, m.Live, m.Cordon, m.Report})
						}
						data, _ := json.MarshalIndent(rows, "", "  ")
						_, err := io.Out.Write(append(data, '\n'))
						return err
					}
					tw := tabwriter.NewWriter(io.Out, 0, 0, 2, ' ', 0)
					fmt.Fprintln(tw, "NODE\tSTATUS\tCORDON\tMEMORY\tFREE\tLLAMA\tREPORTED")
					for _, m := range ms {
						status, mem, free, llama, age := "down", "-", "-", "-", "-"
						if m.Live {
							status = "up"
							mem, free = pools.GB(m.Report.MemoryTotalGB), pools.GB(m.Report.MemoryFreeGB)
							llama = fmt.Sprint(len(m.Report.LlamaServers))
							age = time.Since(m.Report.Time).Round(time.Second).String() + " ago"
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, status, orDash(string(m.Cordon)), mem, free, llama, age)
					}
					return tw.Flush()
				})
			}
		},
	})
	for _, c := range []struct {
		name, summary, help string
		cordon              pools.Cordon
	}{
		{"cordon", "place no new lane on a node", "The planner places no lane on node NAME that is not running there already: the lanes it runs stay.", pools.Cordoned},
		{"drain", "move every lane off a node", "The planner places no lane on node NAME: the next apply moves its lanes off, make-before-break.", pools.Drained},
		{"uncordon", "let a node take lanes again", "Undoes cordon and drain: the planner places lanes on node NAME again.", ""},
	} {
		register(&command{
			name:    "node " + c.name,
			args:    "NAME [PATH...]",
			summary: c.summary,
			help:    c.help + "\n\nExit codes: 0 done, 1 a node not enrolled, or an error.",
			flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
				return func(args []string, io Stdio) int {
					if len(args) < 1 {
						fmt.Fprintf(io.Err, "poolc node %s: want the node's NAME\nRun 'poolc node %s --help' for usage.\n", c.name, c.name)
						return ExitError
					}
					return withRegistry(args[1:], io, "node "+c.name, func(_ *compiler.Config, r *membership.Registry) error {
						if err := r.SetCordon(context.Background(), args[0], c.cordon); err != nil {
							return err
						}
						fmt.Fprintf(io.Out, "Node %s: %s. Run poolc plan to see what moves.\n", args[0], orDash(string(c.cordon)))
						return nil
					})
				}
			},
		})
	}
	register(&command{
		name:    "node leave",
		args:    "NAME [PATH...]",
		summary: "remove a drained node from the membership",
		help: `Removes node NAME from the pool's membership: its enrolment and its
agent's lease (the agent stops). The node must be drained first ("poolc
node drain NAME", then apply), so that no lane is lost; afterwards the
planner takes its liveness from the state again, so remove it from the
configuration too.

Exit codes: 0 removed, 1 a node not drained or not enrolled, or an error.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			return func(args []string, io Stdio) int {
				if len(args) < 1 {
					fmt.Fprintln(io.Err, "poolc node leave: want the node's NAME\nRun 'poolc node leave --help' for usage.")
					return ExitError
				}
				return withRegistry(args[1:], io, "node leave", func(_ *compiler.Config, r *membership.Registry) error {
					if err := r.Leave(context.Background(), args[0]); err != nil {
						return err
					}
					fmt.Fprintf(io.Out, "Node %s left the pool.\n", args[0])
					return nil
				})
			}
		},
	})
}
