#!/usr/bin/env bash
# Kubernetes components for the kube end-to-end tests (internal/testing/testkube
# starts them on loopback): etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kwok, built from the tools module tools/kube into
# .ci/bin. Prints each build's time; Go's build cache makes a rerun fast.
set -euo pipefail
exec bash "$(dirname "$0")/../../tools/kube/build.sh"
