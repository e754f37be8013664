// Command etcd runs the etcd server of go.etcd.io/etcd/server/v3, with the
// flags of the upstream etcd binary, for the kube end-to-end tests.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
