package cli

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/plugins/host"
)

func init() {
	register(&command{
		name:    "validate",
		args:    "[PATH...]",
		summary: "check a pool for mistakes and report every finding",
		help: `Loads the pool and checks it: the schema (field names, types, ranges),
references (every lane's model and nodes, every alias, one active
profile), registry and port rules, and the memory budgets of the nodes
under every profile. Then it starts the pool's actuator plugins, as plan
and apply do, and checks what only they can tell: each plugin's config
block against the schema the plugin declares, and that the plugin each
target names (a node's runtime, the gateway, a pod pool's cluster and
image_sync) handles the step kinds the target needs (--plugins=false skips
this, for a machine without the plugin binaries). Every finding is
reported with its file:line:col and the numbers that break the rule.

Valid pools print nothing (a one-line summary with -v). Findings go to
standard error; with --format json one JSON document goes to standard
output instead, valid or not:

  {"format_version": "1", "valid": false, "pool": "spark-lab",
   "files": [...], "errors": 1, "warnings": 0,
   "diagnostics": [{"severity": "error", "code": "unknown-model",
     "message": "...", "file": "pool.hcl", "line": 12, "column": 17,
     "path": ["lane", "video", "model"]}]}

Examples:
  poolc validate examples/spark-lab
  poolc validate -v pools/
  poolc validate --format json pools/ | jq '.diagnostics[].message'

Exit codes: 0 valid (warnings allowed), 1 findings or an error.`,
		flags: func(fs *pflag.FlagSet) func([]string, Stdio) int {
			format := fs.String("format", "text", "output format: text or json")
			verbose := fs.BoolP("verbose", "v", false, "print a one-line summary when the pool is valid")
			withPlugins := fs.Bool("plugins", true, "start the plugins to check their config blocks and the kinds their targets need")
			return func(args []string, io Stdio) int {
				v, err := newDiagView(*format, io)
				if err != nil {
					fmt.Fprintf(io.Err, "poolc validate: %v\n", err)
					return ExitError
				}
				cfg, diags := compiler.Load(args)
				if *withPlugins && !diags.HasErrors() {
					set, pdiags := host.Start(context.Background(), cfg.Pool, host.Options{WorkDir: cfg.Dir(), Stderr: io.Err})
					if set != nil {
						set.Close()
					}
					cfg.Sources.Attach(pdiags)
					diags = append(diags, pdiags...)
					diags.Sort()
				}
				v.Validation(cfg, diags, *verbose)
				if diags.HasErrors() {
					return ExitError
				}
				return ExitOK
			}
		},
	})
}
