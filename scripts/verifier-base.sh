#!/usr/bin/env bash
# A local base image for verifier_container/Dockerfile, made from Debian's packages: for machines
# that reach no container registry (the Dockerfile's default base is the official python image).
# Debian trixie ships Python 3.13, like that pin. Prints the image's name on stdout:
#
#   BASE=$(scripts/verifier-base.sh)
#   podman build --build-arg BASE="$BASE" -f verifier_container/Dockerfile -t taskgate-verifier .
#
# Cached: the name carries a hash of this script and its settings, and an image of that name is
# reused (`podman image exists`), so only the first run on a machine (or after a change here)
# runs debootstrap. Needs root, podman and debootstrap. SUITE and MIRROR may be set.
set -euo pipefail
SUITE=${SUITE:-trixie}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
PACKAGES=python3,python3-venv,git,ca-certificates
recipe=$( { cat "$0"; echo "$SUITE $MIRROR $PACKAGES"; } | sha256sum | cut -c1-12)
NAME="localhost/taskgate-base:$SUITE-$recipe"
if podman image exists "$NAME"; then
  echo "verifier-base: $NAME is cached" >&2
  echo "$NAME"
  exit 0
fi
for tool in debootstrap chroot tar; do
  command -v "$tool" >/dev/null || { echo "verifier-base: $tool is missing (apt-get install debootstrap)" >&2; exit 1; }
done
work=$(mktemp -d /var/tmp/taskgate-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "verifier-base: debootstrap $SUITE from $MIRROR (a minute or two)" >&2
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$work/root" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
# A virtual environment at /usr/local gives what the official python image has there: python3 and
# pip on the default PATH, installing into /usr/local (Debian's own Python refuses pip, PEP 668).
chroot "$work/root" python3 -m venv /usr/local
rm -f "$work/root"/usr/local/bin/[Aa]ctivate*
rm -rf "$work/root"/var/cache/apt/archives/*.deb "$work/root"/var/lib/apt/lists/* \
  "$work/root"/usr/share/doc/* "$work/root"/usr/share/man/* "$work/root"/usr/share/info/*
tar -C "$work/root" -c . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["python3"]' \
  - "$NAME" >/dev/null
echo "verifier-base: made $NAME" >&2
echo "$NAME"
