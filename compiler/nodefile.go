package compiler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"

	"poolc.dev/poolc/compiler/memest"
	"poolc.dev/poolc/internal/sshx"
	"poolc.dev/poolc/pools"
)

// llamaRuntime is the built-in actuator whose nodes hold prefetched model
// files poolc can read a header from.
const llamaRuntime = "llama"

// onNode returns how to read model m's file (at its path) on the nodes
// its lanes are placed on, in placement order, that the built-in llama
// actuator runs: locally with its local setting, else over SSH with its
// known_hosts, key and user, every host key verified. Nil when no such
// node is named.
func onNode(p *pools.Pool, m pools.Model) memest.NodeFile {
	var cfg *llamaAccess
	var nodes []pools.Node
	seen := map[string]bool{}
	for _, l := range p.Lanes {
		if l.Model != m.Name {
			continue
		}
		for _, name := range l.Placement {
			n := p.Node(name)
			if n == nil || seen[name] || n.Runtime != llamaRuntime {
				continue
			}
			seen[name] = true
			nodes = append(nodes, *n)
		}
	}
	for _, pl := range p.Plugins {
		if pl.Name == llamaRuntime && !pl.Builtin {
			return nil // an external plugin of that name: not ours to reach
		}
		if pl.Name == llamaRuntime {
			b, _ := json.Marshal(pl.Config)
			cfg = &llamaAccess{}
			if json.Unmarshal(b, cfg) != nil {
				return nil // the schema check reports it
			}
		}
	}
	if cfg == nil {
		cfg = &llamaAccess{}
	}
	if len(nodes) == 0 || !path.IsAbs(m.Path) || path.Clean(m.Path) != m.Path {
		return nil
	}
	return func(ctx context.Context, max int64) ([]byte, int64, error) {
		var errs []error
		for _, n := range nodes {
			head, size, err := cfg.readHead(ctx, n, m.Path, max)
			if err == nil {
				return head, size, nil
			}
			errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
		}
		return nil, 0, fmt.Errorf("reading the GGUF header of %s on its nodes: %w", m.Path, errors.Join(errs...))
	}
}

// llamaAccess is what the llama actuator's config says of reaching its
// nodes.
type llamaAccess struct {
	sshx.Settings
	Local bool `json:"local"`
}

// scriptHead prints file $1's size in bytes on a line, then its first $2
// bytes.
const scriptHead = `wc -c < "$1" && head -c "$2" < "$1"`

// readHead reads at most max bytes from the start of file on node n, and
// its size.
func (a *llamaAccess) readHead(ctx context.Context, n pools.Node, file string, max int64) ([]byte, int64, error) {
	if a.Local {
		f, err := os.Open(file)
		if err != nil {
			return nil, 0, err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return nil, 0, err
		}
		head, err := io.ReadAll(io.LimitReader(f, max))
		return head, st.Size(), err
	}
	if n.Address == "" {
		return nil, 0, errors.New("no address to reach over SSH")
	}
	sc := a.Settings.Config()
	sc.MaxOutput = max + 64 // the size line beside the head
	pool, err := sshx.NewPool(sc)
	if err != nil {
		return nil, 0, err
	}
	defer pool.Close()
	client := pool.Client(sshx.Endpoint{User: a.LoginUser(n.SSHUser), Host: n.Address, Port: n.SSHPort})
	out, err := client.Run(ctx, []string{"sh", "-c", scriptHead, "sh", file, strconv.FormatInt(max, 10)}, nil)
	if err != nil {
		return nil, 0, err
	}
	line, head, ok := bytes.Cut(out.Stdout, []byte("\n"))
	size, perr := strconv.ParseInt(string(bytes.TrimSpace(line)), 10, 64)
	if !ok || perr != nil || size < 0 {
		return nil, 0, errors.New("the header read printed no size line")
	}
	return head, size, nil
}
