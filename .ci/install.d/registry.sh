#!/usr/bin/env bash
# Debian's docker-registry (the CNCF distribution registry, 2.8) for the
# end-to-end tests of plugins/imagesync. The tests write their own config
# and run it on a loopback port; the packaged service is stopped so it holds
# no port and no storage the tests could meet.
set -euo pipefail
if ! command -v docker-registry >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-registry
fi
if command -v systemctl >/dev/null && systemctl is-active --quiet docker-registry 2>/dev/null; then
  systemctl stop docker-registry || true
fi
