//go:build tools

// Package tools records the commands this module builds, so go mod tidy keeps
// their dependencies. .ci/install.d/kube.sh builds each of them with go build.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
