#!/bin/sh
# The image tests/integration/test_container.py runs lnk-sandbox in: a Debian 12 root
# made with debootstrap (minbase, with python3, python3-venv, git, procps, bubblewrap as
# the README asks, make and gcc for its build recipe) and a user
# of its own, imported with `docker import`, as a new user of an unprivileged container
# makes one offline. Made once, cached in LNK_DOCKER_CACHE (default /var/cache/lnk-docker,
# never the repository), and made again only when RECIPE changes.
#
#   ci/container-image.sh          prints the image's tag once it exists
#
# Run as root, with a Docker daemon running (the test's set-up starts one).
set -eu
CACHE=${LNK_DOCKER_CACHE:-/var/cache/lnk-docker}
MIRROR=${LNK_DOCKER_MIRROR:-http://deb.debian.org/debian}
DOCKER=${LNK_DOCKER:-/usr/bin/docker}
# Bump when the recipe changes: the root and the image are made again.
RECIPE=2
PACKAGES=python3,python3-venv,git,procps,bubblewrap,make,gcc,libc6-dev
TAG=lnk-sandbox-test:bookworm-$RECIPE
ROOTFS=$CACHE/rootfs

say() { printf 'ci/container-image.sh: %s\n' "$*" >&2; }

if "$DOCKER" image inspect "$TAG" >/dev/null 2>&1; then
    echo "$TAG"
    exit 0
fi
mkdir -p "$CACHE"
exec 9>"$CACHE/lock"
flock 9
if ! "$DOCKER" image inspect "$TAG" >/dev/null 2>&1; then
    if [ "$(cat "$ROOTFS/.lnk-docker-recipe" 2>/dev/null)" != "$RECIPE $PACKAGES" ]; then
        command -v debootstrap >/dev/null 2>&1 || {
            say "debootstrap is missing (ci/setup.sh --test installs it)"; exit 2; }
        say "making the image's root in $ROOTFS (once; a few minutes)"
        rm -rf "$ROOTFS"
        nice -n 10 debootstrap --variant=minbase --include="$PACKAGES" bookworm "$ROOTFS" \
            "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
            || { say "debootstrap failed; see $CACHE/debootstrap.log"; exit 1; }
        # The unprivileged user the test runs lnk-sandbox as, inside the container.
        chroot "$ROOTFS" useradd --create-home --uid 1000 --shell /bin/sh lnk-user
        rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
        echo "$RECIPE $PACKAGES" >"$ROOTFS/.lnk-docker-recipe"
    fi
    say "importing $ROOTFS as $TAG"
    tar -C "$ROOTFS" --numeric-owner -cf - . | "$DOCKER" import - "$TAG" >/dev/null
fi
echo "$TAG"
