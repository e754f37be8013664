package views

import (
	"fmt"
	"io"
)

// Version is poolc version: "poolc " and the build's version.
func Version(w io.Writer, version string) {
	fmt.Fprintf(w, "poolc %s\n", version)
}

// Formatted names a file poolc fmt rewrote (or, with --check, would
// rewrite), one a line.
func Formatted(w io.Writer, file string) {
	fmt.Fprintln(w, file)
}

// EtcdServing says where etcd serve's member listens and keeps its data,
// and how a pool's state block points at it.
func EtcdServing(w io.Writer, listen, dataDir string) {
	fmt.Fprintf(w, "etcd is serving on %s, its data in %s; use endpoints = [%q] in a pool's state block. Ctrl-C stops it.\n", listen, dataDir, listen)
}

// GatewayConfig is gateway config: the gateway's configuration as
// generated.
func GatewayConfig(w io.Writer, text string) error {
	_, err := io.WriteString(w, text)
	return err
}
