#!/usr/bin/env bash
# OpenSSH's sshd for the end-to-end tests of internal/sshx, plugins/imagesync
# and plugins/llama (internal/testing/testsshd starts it on loopback ports).
set -euo pipefail
if ! command -v sshd >/dev/null && [ ! -x /usr/sbin/sshd ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server
fi
# sshd refuses to start without its privilege separation directory.
mkdir -p /run/sshd
