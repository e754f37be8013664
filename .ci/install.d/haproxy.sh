#!/usr/bin/env bash
# HAProxy (Debian package haproxy, 2.6 on bookworm) for the end-to-end tests
# of plugins/haproxy: they run it on loopback in front of llama-server
# stand-ins and flip routes through its runtime API.
set -euo pipefail
if ! command -v haproxy >/dev/null && [ ! -x /usr/sbin/haproxy ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy
fi
