#!/bin/sh
# Build the local base image `localhost/debian:bookworm-minbase` with debootstrap, for machines that
# reach Debian's package archive but no image registry. It stands in for `debian:bookworm-slim`
# (the Containerfile's default BASE_IMAGE): the same release, the same minimal package set.
#
#   sudo deploy/make-base-image.sh            # root: debootstrap and podman need it
#   podman build --isolation=chroot --build-arg BASE_IMAGE=localhost/debian:bookworm-minbase \
#       -f deploy/Containerfile -t sketchauth:latest .
#
# The debootstrap tree is kept as a tarball in $SKETCHAUTH_BASE_CACHE (default
# /var/cache/sketchauth-base), so a second run only re-imports it (seconds). Delete the tarball to
# refresh the base (security updates); `podman image rm localhost/debian:bookworm-minbase` to re-import.
set -eu

CACHE="${SKETCHAUTH_BASE_CACHE:-/var/cache/sketchauth-base}"
SUITE="${SKETCHAUTH_BASE_SUITE:-bookworm}"
MIRROR="${SKETCHAUTH_BASE_MIRROR:-http://deb.debian.org/debian}"
IMAGE="${SKETCHAUTH_BASE_IMAGE:-localhost/debian:${SUITE}-minbase}"
TARBALL="$CACHE/$SUITE-minbase.tar"

if podman image exists "$IMAGE"; then
    echo "$IMAGE already present"
    exit 0
fi
mkdir -p "$CACHE"
if [ ! -s "$TARBALL" ]; then
    root="$(mktemp -d "$CACHE/rootfs.XXXXXX")"
    trap 'rm -rf "$root"' EXIT
    debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR"
    # What debian:*-slim also does: no package lists or caches in the layer.
    rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
    tar -C "$root" --numeric-owner -cf "$TARBALL.part" .
    mv "$TARBALL.part" "$TARBALL"
fi
podman import --change 'CMD ["/bin/bash"]' "$TARBALL" "$IMAGE"
echo "$IMAGE imported from $TARBALL"
