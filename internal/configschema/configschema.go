// Package configschema holds the CUE constraints the built-in plugins'
// config schemas share, one per kind of value, so that every string of a
// plugin's config block has a rule that poolc validate enforces at the
// attribute's file:line:col (the sdk checks the block against the
// schema), and a bad value never reaches a node to fail there after a
// prefetch.
package configschema

const (
	// NodePath is a path on a node that a script receives as an argument:
	// absolute, or relative to the login directory, made of letters,
	// digits and ._+@-~/ only (no space, quote, line break or shell
	// metacharacter), not starting with '-' (an option to mkdir), with no
	// ".." component.
	NodePath = `string & =~"^[A-Za-z0-9._+@~/-]{1,1000}$" & !~"^-" & !~"(^|/)\\.\\.(/|$)"`

	// AbsNodePath is NodePath that is absolute.
	AbsNodePath = NodePath + ` & =~"^/"`

	// Command is a program on a node: an absolute NodePath, or a bare
	// name looked up on the node's PATH.
	Command = `string & (=~"^/[A-Za-z0-9._+@/-]{1,999}$" | =~"^[A-Za-z0-9_+@][A-Za-z0-9._+@-]{0,254}$") & !~"(^|/)\\.\\.(/|$)"`

	// Host is a host name or an IP address as a program takes it: a DNS
	// name (letters, digits, '-', dots), an IPv4 address, or an IPv6
	// address with or without brackets. No port.
	Host = `string & =~"^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\\[?[0-9A-Fa-f:.]{2,45}\\]?)$"`

	// LocalPath is a file on the machine poolc runs on: any text without
	// control or line-separator characters.
	LocalPath = `string & =~"^[^\\p{C}\\p{Zl}\\p{Zp}]{1,1000}$"`

	// Env is an environment for a process: names are identifiers, values
	// hold no NUL and no line break. The struct is closed: a name that is
	// not an identifier is refused, not passed through.
	Env = `close({[=~"^[A-Za-z_][A-Za-z0-9_]*$"]: string & =~"^[^\\x00\\n\\r]*$"})`
)
