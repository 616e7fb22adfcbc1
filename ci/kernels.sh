#!/bin/sh
# The kernel matrix: the tests marked kernel_matrix, run under each kernel Debian 12's
# own packages offer, each booted as it ships and again without Landlock in `lsm=`.
#
#   ci/kernels.sh [--only LABEL,... | --ci] [--prepare | --boot] [--rebuild] [-- PYTEST ARGS]
#
#   --only LABEL,...  boot only these. A label is a kernel series as shipped, or without
#                     Landlock: 6.1, 6.1-no-landlock, 6.12, 6.12-no-landlock (the series
#                     the root filesystem holds; a label it has no kernel for is refused,
#                     naming those it has)
#   --ci              what .ci/run boots: the stock kernel as shipped (6.1) every time, and
#                     one of the others in turn (the turn kept in the cache, moved on only
#                     after a run that passed; on a fresh cache the commit chooses).
#                     With LNK_KERNELS_DEADLINE (seconds since the epoch; .ci/run sets it
#                     from its budget) a boot after the first is made only if its last
#                     time here ends before it; one left out keeps its turn
#   --prepare         make the root filesystem and this checkout's image, boot nothing
#   --boot            boot the image the last --prepare made, without making it again
#   --rebuild         make the root filesystem again, even when the cached one is current
#
# Run as root on a Debian 12 machine (it installs QEMU and debootstrap with apt, waiting
# for another apt's lock). Once, into the cache (LNK_KERNELS_CACHE, default
# /var/cache/lnk-kernels, never the repository): a Debian 12 root filesystem made with
# debootstrap holding the stock kernel (linux-image-amd64, 6.1) and the newest series the
# security archive offers (6.12), what ci/setup.sh installs, and the test user. Every run:
# this checkout's files (committed or not) copied in and set up with ci/setup.sh and the
# test extra's tools in a chroot (pip needs the network, which the VM has none of), the
# tree made into an ext4 image with `mke2fs -d` (no loop device), then one boot per kernel
# and Landlock setting, booted with Debian's own kernel and initrd and `init=`
# ci/kernels/guest-init.sh, which runs pytest and powers off; the results come back on a
# second disk as a tar stream. A guest whose console is silent for LNK_KERNELS_STALL
# seconds (default 300: it marks each test there, and pytest ends a test after 120) is
# hung, and killed then; one still running after LNK_KERNELS_TIMEOUT seconds (default
# 1800: a boot took up to 21 minutes here under load) is killed too; both fail. Prints
# a table per kernel; exits 1 when a boot failed a test, was killed or brought nothing
# back.
#
# Facts that shaped it: /dev/kvm here is PVM (it runs only PVM-built guests; a stock
# kernel never gets past its decompressor), so QEMU's TCG emulation it is, 5 to 15 times
# slower than the host; virtme-ng's 9p root makes the files the unprivileged test user
# writes root's. QEMU runs at nice 19 (LNK_KERNELS_NICE): the machine is shared.
set -eu
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${LNK_KERNELS_CACHE:-/var/cache/lnk-kernels}
ROOTFS=$CACHE/rootfs
MIRROR=${LNK_KERNELS_MIRROR:-http://deb.debian.org/debian}
SECURITY=${LNK_KERNELS_SECURITY:-http://deb.debian.org/debian-security}
VM_TIMEOUT=${LNK_KERNELS_TIMEOUT:-1800}
STALL=${LNK_KERNELS_STALL:-300}
NICE=${LNK_KERNELS_NICE:-19}
# Bump when the root filesystem's recipe changes: the cached one is then made again.
RECIPE=1
PACKAGES="bubblewrap python3 python3-venv python3-dev gcc libc6-dev make git curl perl
ca-certificates iproute2 procps util-linux passwd kmod initramfs-tools"

CHOOSE="/usr/bin/python3 $REPO/ci/kernels/choose.py"

only=""
ci=0
rebuild=0
phase=both
while [ $# -gt 0 ]; do
    case "$1" in
        --only) [ $# -ge 2 ] || { echo "ci/kernels.sh: --only needs labels (see --help)" >&2; exit 2; }
                only="$2"; shift 2 ;;
        --ci) ci=1; shift ;;
        --prepare) phase=prepare; shift ;;
        --boot) phase=boot; shift ;;
        --rebuild) rebuild=1; shift ;;
        --) shift; break ;;
        -h|--help)
            sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
            if [ -d "$ROOTFS/boot" ]; then
                echo "The labels of the root filesystem cached in $ROOTFS: $($CHOOSE --labels "$ROOTFS/boot")"
            fi
            exit 0 ;;
        *) echo "ci/kernels.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [ -n "$only" ] && [ "$ci" = 1 ]; then
    echo "ci/kernels.sh: --only and --ci choose the boots each; give one" >&2
    exit 2
fi
if [ "$phase" = boot ] && [ $# -gt 0 ]; then
    echo "ci/kernels.sh: --boot runs the tests --prepare chose; give pytest's arguments there" >&2
    exit 2
fi
# A label that cannot be one is refused before minutes of building; one the cached root
# has no kernel for, as soon as the root is there.
[ -z "$only" ] || $CHOOSE --syntax "$only" || exit 2
matrix=0
[ $# -gt 0 ] || { matrix=1; set -- -m kernel_matrix; }
if [ "$(id -u)" != 0 ]; then
    echo "ci/kernels.sh: run it as root (debootstrap, chroot and the image need root)" >&2
    exit 2
fi

say() { printf 'ci/kernels.sh: %s\n' "$*" >&2; }
low() { nice -n "$NICE" "$@"; }

mkdir -p "$CACHE"
exec 9>"$CACHE/lock"
if ! flock -n 9; then
    say "another run holds $CACHE/lock; waiting for it (at most 30 minutes)"
    flock -w 1800 9 || { say "another run still holds $CACHE/lock"; exit 2; }
fi

# -- the host's tools ------------------------------------------------------------------------
need=""
command -v qemu-system-x86_64 >/dev/null 2>&1 || need="$need qemu-system-x86"
command -v debootstrap >/dev/null 2>&1 || need="$need debootstrap"
command -v mke2fs >/dev/null 2>&1 || need="$need e2fsprogs"
if [ -n "$need" ]; then
    say "installing$need"
    # Another apt (unattended-upgrades on a fresh machine, a second set-up) holds dpkg's
    # lock for minutes: wait for it rather than die.
    apt-get -o DPkg::Lock::Timeout=900 update -qq
    # shellcheck disable=SC2086
    low env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install \
        -y -qq --no-install-recommends $need >/dev/null
fi

# -- the root filesystem, once ---------------------------------------------------------------
mounted=""
unmount_chroot() {
    for m in $mounted; do umount -l "$m" 2>/dev/null || true; done
    mounted=""
}
trap unmount_chroot EXIT
trap 'unmount_chroot; exit 130' INT TERM
in_chroot() {
    low env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        DEBIAN_FRONTEND=noninteractive chroot "$ROOTFS" "$@"
}
mount_chroot() {
    mount -t proc proc "$ROOTFS/proc" && mounted="$ROOTFS/proc $mounted"
    mount --rbind /dev "$ROOTFS/dev" && mounted="$ROOTFS/dev $mounted"
    cp /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
}

stamp="$RECIPE $PACKAGES"
if [ "$rebuild" = 1 ] || [ "$(cat "$ROOTFS/.lnk-kernels-recipe" 2>/dev/null)" != "$stamp" ]; then
    start=$(date +%s)
    say "making the root filesystem in $ROOTFS (once; a few minutes)"
    rm -rf "$ROOTFS"
    low debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
        || { say "debootstrap failed; see $CACHE/debootstrap.log"; exit 1; }
    cat >"$ROOTFS/etc/apt/sources.list" <<SOURCES
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY bookworm-security main
SOURCES
    mount_chroot
    in_chroot apt-get update -qq
    # The stock kernel, and the newest series the archives offer (a linux-image-X.Y-amd64
    # meta-package: 6.12 in Debian 12's security archive), each with its initrd.
    newer=$(in_chroot apt-cache pkgnames linux-image- \
        | grep -E '^linux-image-[0-9]+\.[0-9]+-amd64$' | sort -V | tail -n 1)
    # shellcheck disable=SC2086
    in_chroot apt-get install -y -qq --no-install-recommends $PACKAGES linux-image-amd64 \
        $newer >"$CACHE/packages.log" 2>&1 \
        || { say "installing packages failed; see $CACHE/packages.log"; exit 1; }
    in_chroot apt-get clean
    in_chroot useradd --system --no-create-home --shell /usr/sbin/nologin lnk-test
    echo lnk-kernels >"$ROOTFS/etc/hostname"
    printf '127.0.0.1\tlocalhost\n127.0.1.1\tlnk-kernels\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
        >"$ROOTFS/etc/hosts"
    mkdir -p "$ROOTFS/srv/lnk-sandbox"
    chmod 755 "$ROOTFS/srv" "$ROOTFS/srv/lnk-sandbox"
    unmount_chroot
    echo "$stamp" >"$ROOTFS/.lnk-kernels-recipe"
    say "root filesystem made in $(($(date +%s) - start)) s"
fi

# -- which boots ------------------------------------------------------------------------------
if [ -n "$only" ]; then
    boots=$($CHOOSE "$ROOTFS/boot" --only "$only") || exit 2
elif [ "$ci" = 1 ]; then
    boots=$($CHOOSE "$ROOTFS/boot" --ci "$CACHE/rotation" \
        "$(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo 0)") || exit 2
else
    boots=$($CHOOSE "$ROOTFS/boot") || exit 2
fi
image=$CACHE/root.img

if [ "$phase" != boot ]; then
# -- this checkout, set up inside ------------------------------------------------------------
start=$(date +%s)
# Tracked and untracked files (not ignored ones): what is being tested, committed or not.
# The venv stays from the last run; pip brings it up to date.
dest=$ROOTFS/srv/lnk-sandbox
find "$dest" -mindepth 1 -maxdepth 1 ! -name .venv -exec rm -rf {} +
(cd "$REPO" && git ls-files -z --cached --others --exclude-standard \
    | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$dest"
mount_chroot
# pip reaches PyPI as this machine does: its trust store (a proxy's own authority, where
# there is one) and its pip settings, for the set-up only.
mount --bind -o ro /etc/ssl/certs "$ROOTFS/etc/ssl/certs" && mounted="$ROOTFS/etc/ssl/certs $mounted"
pip_env=""
for name in PIP_CERT PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST PIP_DEFAULT_TIMEOUT \
        SSL_CERT_FILE REQUESTS_CA_BUNDLE; do
    value=$(printenv "$name" || true)
    [ -z "$value" ] || pip_env="$pip_env $name=$value"
done
[ ! -f /etc/pip.conf ] || cp /etc/pip.conf "$ROOTFS/etc/pip.conf"
# ci/setup.sh as a user runs it (the wheel and what running needs), then the test extra's
# tools alone: `--test` would also install the host suite's programs (Chromium, Neovim),
# which no kernel_matrix test runs, into an image copied for every run.
tools=$(/usr/bin/python3 -c 'import sys, tomllib
print(" ".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["test"]))' \
    "$REPO/pyproject.toml")
# shellcheck disable=SC2086
in_chroot env $pip_env sh -c 'cd /srv/lnk-sandbox && ci/setup.sh \
    && .venv/bin/python -m pip -q --disable-pip-version-check install "$@"' sh $tools \
    >"$CACHE/setup.log" 2>&1 \
    || { say "ci/setup.sh in the root filesystem failed; see $CACHE/setup.log"; exit 1; }
if [ "$matrix" = 1 ]; then
    # The kernel_matrix tests' files, as pytest itself collects them here at the host's
    # speed: the guest then imports those alone (collecting the whole suite there, to
    # keep 137 of 2700 tests, took 3 to 6 minutes of every boot under TCG).
    files=$(in_chroot sh -c 'cd /srv/lnk-sandbox && .venv/bin/python -P -m pytest \
        -p no:cacheprovider --collect-only -q -m kernel_matrix' 2>>"$CACHE/setup.log" \
        | sed -n 's/::.*//p' | sort -u)
    [ -z "$files" ] || set -- "$@" $files
fi
unmount_chroot
rm -f "$ROOTFS/etc/pip.conf"
rm -f "$ROOTFS/etc/resolv.conf"
install -m 755 "$REPO/ci/kernels/guest-init.sh" "$ROOTFS/usr/local/sbin/lnk-kernel-init"
printf '%s\n' "$@" >"$ROOTFS/srv/lnk-sandbox-pytest-args"
size_mb=$(( $(du -sm "$ROOTFS" | cut -f1) + 2048 ))
rm -f "$image" "$image.from"
low mke2fs -q -t ext4 -L lnk-root -d "$ROOTFS" "$image" "${size_mb}M" >/dev/null
# Which checkout the image holds: --boot boots only its own.
echo "$REPO" >"$image.from"
say "checkout set up and image made in $(($(date +%s) - start)) s"
fi
[ "$phase" != prepare ] || exit 0
if [ "$(cat "$image.from" 2>/dev/null)" != "$REPO" ]; then
    say "the image in $image is not this checkout's (${REPO}): run --prepare first"
    exit 2
fi

# -- one boot per kernel and Landlock setting ------------------------------------------------
results=$CACHE/results
rm -rf "$results"
mkdir -p "$results"
first=$(echo "$boots" | head -n 1 | cut -d' ' -f1)
echo "$boots" | while read -r label release mode; do
    # CI's budget (.ci/run's deadline): the stock kernel always; a boot after it only if
    # its last time here still ends in time, else its turn is kept (no rotation.next).
    if [ -n "${LNK_KERNELS_DEADLINE:-}" ] && [ "$label" != "$first" ] \
        && ! $CHOOSE --fits "$label" "$(date +%s)" "$LNK_KERNELS_DEADLINE" "$CACHE/seconds-$label"; then
        rm -f "$CACHE/rotation.next"
        continue
    fi
    lsm=$(sed -n 's/^CONFIG_LSM="\(.*\)"$/\1/p' "$ROOTFS/boot/config-$release")
    if [ "$mode" = no-landlock ]; then
        lsm=$(echo "$lsm" | tr , '\n' | grep -vx landlock | paste -sd, -)
    fi
    out=$results/$label
    mkdir -p "$out"
    truncate -s 64M "$out/disk.tar"
    say "booting $release ($label, lsm=$lsm) under TCG; console in $out/console.log"
    start=$(date +%s)
    status=0
    # The CPU QEMU spent, where GNU time is installed: on a shared machine the wall time
    # follows the load, the CPU time far less (what a CI budget needs to know).
    cpu=""
    [ ! -x /usr/bin/time ] || cpu="/usr/bin/time -f %U+%S -o $out/cpu"
    # In the background, watched: the guest writes each test's mark to its console, and
    # one silent for LNK_KERNELS_STALL seconds is hung, killed long before the overall
    # limit. Its end is a file, never a pid polled: pids here are reused within seconds
    # (pid_max 32768, and test suites beside), and a poll once kept a boot that had
    # powered off "running" for 5 minutes. nice execs timeout, so vm.pid is timeout's,
    # which passes a TERM on to its process group, QEMU's.
    rm -f "$out/exit" "$out/vm.pid"
    (
        # shellcheck disable=SC2086
        nice -n "$NICE" timeout --kill-after=30 "$VM_TIMEOUT" $cpu qemu-system-x86_64 \
            -accel tcg,thread=multi -cpu max -smp 2 -m 4096 \
            -kernel "$ROOTFS/boot/vmlinuz-$release" -initrd "$ROOTFS/boot/initrd.img-$release" \
            -append "root=/dev/vda rootfstype=ext4 rw console=ttyS0 panic=-1 lsm=$lsm init=/usr/local/sbin/lnk-kernel-init" \
            -drive "file=$image,format=raw,if=virtio,snapshot=on" \
            -drive "file=$out/disk.tar,format=raw,if=virtio" \
            -device virtio-rng-pci -nic none -no-reboot -display none \
            -serial "file:$out/console.log" -monitor none </dev/null &
        echo $! >"$out/vm.pid"
        code=0
        wait $! || code=$?
        echo "$code" >"$out/exit"
    ) &
    watched=$!
    size=0
    silent=0
    while [ ! -f "$out/exit" ]; do
        sleep 5
        now=$(stat -c %s "$out/console.log" 2>/dev/null || echo 0)
        if [ "$now" != "$size" ]; then size=$now; silent=0; else silent=$((silent + 5)); fi
        if [ "$silent" -ge "$STALL" ] && [ ! -f "$out/exit" ]; then
            say "$label: the guest has been silent for $STALL s: hung; killing it"
            echo "$STALL" >"$out/stalled"
            kill -TERM "$(cat "$out/vm.pid")" 2>/dev/null || true
            break
        fi
    done
    wait "$watched" || true
    status=$(cat "$out/exit" 2>/dev/null || echo 1)
    rm -f "$out/exit" "$out/vm.pid"
    echo $(($(date +%s) - start)) >"$out/seconds"
    # What CI's budget reckons with next time (the results folder is made anew each run).
    cp "$out/seconds" "$CACHE/seconds-$label"
    # timeout's 124: the guest ran past LNK_KERNELS_TIMEOUT and was killed.
    [ "$status" != 124 ] || echo "$VM_TIMEOUT" >"$out/timed-out"
    tar -xf "$out/disk.tar" -C "$out" 2>/dev/null || say "$label: no results came back (qemu status $status)"
    rm -f "$out/disk.tar"
done

status=0
/usr/bin/python3 "$REPO/ci/kernels/table.py" "$results" || status=$?
# CI's turn moves on only once its boots passed: a failing one is booted again next time.
if [ "$ci" = 1 ] && [ "$status" = 0 ] && [ -f "$CACHE/rotation.next" ]; then
    mv "$CACHE/rotation.next" "$CACHE/rotation"
fi
exit "$status"
