#!/usr/bin/env bash
# Builds the Kubernetes components the kube end-to-end tests run against
# (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok) from
# the tools module tools/kube, through the module proxy. The binaries go to
# $POOLC_KUBE_BIN (default .ci/bin, gitignored); the tests look there too.
# Go's build cache makes a second run take seconds.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bindir="${POOLC_KUBE_BIN:-$root/.ci/bin}"
mkdir -p "$bindir"
cd "$root/tools/kube"

build() { # name package
  local start end
  start=$(date +%s)
  nice go build -trimpath -o "$bindir/$1" "$2"
  end=$(date +%s)
  echo "built $1 in $((end - start))s -> $bindir/$1"
}

total_start=$(date +%s)
build etcd ./etcd
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
build kwok sigs.k8s.io/kwok/cmd/kwok
echo "kube tools built in $(($(date +%s) - total_start))s"
