#!/usr/bin/env bash
# git, for the end-to-end test of `poolc version` (cmd/poolc): it builds
# poolc in a clone of the repository, where Go stamps the VCS revision.
set -euo pipefail
if ! command -v git >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git
fi
