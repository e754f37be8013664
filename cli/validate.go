package cli

import (
	"poolc.dev/poolc/cli/arguments"
	"poolc.dev/poolc/compiler"
)

const validateHelp = `Loads the pool and checks it: the schema (field names, types, ranges),
references (every lane's model and nodes, every alias, one active
profile), registry and port rules, and the memory budgets of the nodes
under every profile. Then it asks the pool's actuator plugins, and checks
what only they can tell: each plugin's config
block against the schema the plugin declares, and that the plugin each
target names (a node's runtime, the gateway, a pod pool's cluster and
image_sync) handles the step kinds the target needs (--plugins=false skips
this, for a machine without the plugin binaries). A built-in plugin is
asked inside poolc (its schema is in poolc's binary), with no process
started. As poolc plugins does, it runs none of the checkout's code: a
declared plugin whose binary lies inside the repository (through a
symbolic link or not) is not started, pinned or not, and a warning says so
with its sha256 (--allow-unpinned starts it). Every finding is reported with its file:line:col and the numbers that
break the rule.

Pod pool members can be written in the compact form operators already use:

  members = "CONTEXT[@SSH_HOST][:CAPACITY][#k3d-REGISTRY:PORT], ..."

  CONTEXT        the cluster's kube context: letters, digits, '.', '_', '-';
                 a context is a member of one pod pool, once
  @SSH_HOST      where the cluster runs, for image sync: a node's name (its
                 address is used) or a host name; none means this machine
  :CAPACITY      how many Jobs it runs at once: an integer >= 1; default 2
  #k3d-REGISTRY:PORT
                 its image registry: a name that starts with "k3d-", a port
                 from 1 to 65535, not used by another registry or a lane of
                 the same host

Members are separated by commas (spaces around them are ignored); earlier
is higher priority; an empty list is an error. A list of strings says the
same with one member per item, members = ["b@node-b:8#k3d-reg:5051", "c"];
an item holding a comma is refused. The long form is one block per member,
member "CONTEXT" { ssh_host = ..., capacity = ..., registry = ... }, in
priority order; a pod pool uses one form, not both.

Memory: a model's memory_gb is optional. Absent, poolc estimates it from
the model's GGUF header (read from a file:// source, or from an http(s)
source with range requests, never the whole file) for the llama-server
args it runs with (-c, -np, -ctk/-ctv, -fa, -b/-ub; llama-server's
defaults when absent). Present, it is checked against that estimate where
the header can be read: more than 10% below it is a warning naming both
numbers and the arguments that drive the estimate (an error with
--strict-memory). With -v the estimates and each node's memory are shown.

Valid pools print nothing (a one-line summary with -v). Findings go to
standard error; with --format json one JSON document goes to standard
output instead, valid or not:

  {"format_version": 1, "valid": false, "pool": "spark-lab",
   "files": [...], "errors": 1, "warnings": 0,
   "diagnostics": [{"severity": "error", "code": "unknown-model",
     "message": "...", "file": "pool.hcl", "line": 12, "column": 17,
     "path": ["lane", "video", "model"]}]}

Examples:
  poolc validate examples/spark-lab
  poolc validate -v pools/
  poolc validate --strict-memory pools/     # in CI: memory_gb must cover the estimate
  poolc validate --format json pools/ | jq '.diagnostics[].message'

Exit codes: 0 valid (warnings allowed), 1 findings or an error.`

func runValidate(a *arguments.Validate, io Stdio) int {
	io.diags = textDiagForm(io.Err, a.NoColor)
	v, err := newDiagView(a.Format, io)
	if err != nil {
		return fail(io, "validate", err.Error())
	}
	cfg, diags := compiler.LoadWith(a.Paths.Paths, memoryChecked(a.StrictMemory))
	if a.Plugins && !diags.HasErrors() {
		set, pdiags := inspectPlugins(cfg, a.AllowUnpinned, io.Err)
		if set != nil {
			set.Close()
		}
		diags = append(diags, pdiags...)
		diags.Sort()
	}
	v.Validation(cfg, diags, a.Verbose)
	if diags.HasErrors() {
		return ExitError
	}
	return ExitOK
}

// memoryChecked are the load options of the commands that show memory:
// estimates for every model whose header poolc can read, declared values
// compared with them.
func memoryChecked(strict bool) compiler.Options {
	opt := compiler.DefaultOptions()
	opt.CheckDeclared, opt.StrictMemory = true, strict
	return opt
}
