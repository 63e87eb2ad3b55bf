#!/usr/bin/env bash
# The verifier image built and run for real: tests/container/check_image.py (podman + runc), after
# the suite (scripts/test.sh makes .venv). Installs what it needs from Debian; the base image it
# makes is cached by podman between runs on the same machine. Prints how long each phase took.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
began=$(date +%s)
missing=()
for tool in podman runc debootstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq --no-install-recommends podman runc debootstrap
fi
if [ ! -x .venv/bin/pytest ]; then
  echo "container-check: run scripts/test.sh first (it makes .venv)" >&2
  exit 1
fi
status=0
.venv/bin/pytest tests/container/check_image.py -s -q -p no:randomly -p no:cacheprovider "$@" || status=$?
# Earlier builds' images this one replaced (untagged now); the base and the layer cache stay.
podman image prune --force --filter label=taskgate.container-check=1 >/dev/null || true
echo "container-check: $(( $(date +%s) - began )) s wall time (exit $status)"
exit $status
