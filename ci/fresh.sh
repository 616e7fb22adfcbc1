#!/bin/sh
# The suite on a fresh machine: `CI=true .ci/run [PYTEST ARGS]` of this checkout inside a
# minimal Debian 12 root where the only programs are debootstrap's minbase and what
# ci/setup.sh installs, so that a test running a program nothing installs fails here
# rather than on a person's new machine (issue 25: CI's machine kept what people had
# installed by hand).
#
#   ci/fresh.sh [--rebuild] [-- PYTEST ARGS]    run the suite (or the tests named)
#   ci/fresh.sh [--rebuild] --shell             a login shell in a fresh root, to look
#   ci/fresh.sh --help
#
# Run as root on this host (debootstrap, mounts and namespaces need root). Once, into
# the cache (LNK_FRESH_CACHE, default /var/cache/lnk-fresh, never the repository):
# `debootstrap --variant=minbase bookworm`, made again when its recipe below changes or
# with --rebuild. Every run: a copy of that root of its own, this checkout's files
# (tracked and untracked, not ignored: what is being tested, committed or not) in
# /srv/lnk-sandbox, and .ci/run there as CI runs it (root, CI=true), which installs with
# ci/setup.sh --test what the tests need; the copy is deleted afterwards, so what one run
# installed is never there for the next. Prints what pytest counted, the exit status
# and the time; the whole output is kept in the cache's logs/. A first ^C stops pytest,
# which reports; a second, or a TERM, ends the run at once. A run killed outright leaves
# its copy, which the next start removes.
#
# What a fresh machine is here: minbase, less than any Debian install (no python3, no
# ca-certificates, no /etc/hosts: each run writes one as the installer does), so that
# what passes here passes on a fuller one; ci/setup.sh installs python3 itself too.
# Measured on this 2-CPU machine under load 8 to 15: the root, once, 1.5 minutes; each
# run's copy seconds, its set-up (apt and pip) 4 to 5 minutes, the suite about 31.
#
# How the root is entered: a mount and a pid namespace of the run's own (`unshare`),
# with the root bound on itself, a fresh /proc, the host's /dev and /sys (lnk uses the
# cgroup hierarchies) with a /dev/shm of its own, a tmpfs /run, then pivot_root and the
# old root unmounted. Not chroot: the kernel refuses a user namespace to a chrooted
# process (EPERM, current_chrooted), and every sandbox makes one. The network is the
# host's (apt and pip need it), with its DNS settings and the trust and pip settings
# pip reaches PyPI with here. Every mount lives in the run's mount namespace, which ends
# with its last process: nothing is mounted on the host, whatever way the run ends.
#
# Facts that shaped it: a copy, not an overlayfs: overlayfs cannot be idmapped
# (mount_setattr MOUNT_ATTR_IDMAP answers EINVAL, Linux 6.18), and root mode binds the
# folders a spec grants through idmapped mounts, so a checkout on an overlay fails
# where a machine's ext4 does not. /tmp stays on the root's disk, as Debian 12 ships it.
# The machine is shared: everything inside runs at nice 10.
set -eu
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${LNK_FRESH_CACHE:-/var/cache/lnk-fresh}
ROOT=$CACHE/root
MIRROR=${LNK_FRESH_MIRROR:-http://deb.debian.org/debian}
SECURITY=${LNK_FRESH_SECURITY:-http://deb.debian.org/debian-security}
# Where the checkout goes in the root: a folder the test user can read, as .ci/run needs.
CHECKOUT=/srv/lnk-sandbox

shell=0
rebuild=0
while [ $# -gt 0 ]; do
    case "$1" in
        --shell) shell=1; shift ;;
        --rebuild) rebuild=1; shift ;;
        --) shift; break ;;
        -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "ci/fresh.sh: unknown argument $1 (pytest's go after --; see --help)" >&2; exit 2 ;;
    esac
done
if [ "$shell" = 1 ] && [ $# -gt 0 ]; then
    echo "ci/fresh.sh: --shell takes no pytest arguments" >&2
    exit 2
fi
if [ "$(id -u)" != 0 ]; then
    echo "ci/fresh.sh: run it as root (debootstrap, mounts and namespaces need root)" >&2
    exit 2
fi

say() { printf 'ci/fresh.sh: %s\n' "$*" >&2; }
low() { nice -n 10 "$@"; }
started=$(date +%s)

# -- the host's tools --------------------------------------------------------------------------
if ! command -v debootstrap >/dev/null 2>&1; then
    say "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
        --no-install-recommends debootstrap >/dev/null
fi
for tool in unshare pivot_root git tar; do
    command -v "$tool" >/dev/null 2>&1 || { say "$tool is missing on this host"; exit 2; }
done

mkdir -p "$CACHE/logs"
chmod 700 "$CACHE"
# The cache's lock: held alone while the root is made, shared while a run copies it.
exec 9>"$CACHE/lock"

# A run's folder is its own while a process of the run holds its lock file (the run's
# pid 1 inherits it, and the run holds it while removing the folder); one whose lock is
# free was left by a run killed outright. The lock file goes last.
remove_run() {
    folder=$1
    if grep -q " $folder/" /proc/self/mountinfo; then
        say "not removing $folder: something is mounted below it (see /proc/self/mountinfo)"
        return 1
    fi
    find "$folder" -mindepth 1 -maxdepth 1 ! -name lock -exec rm -rf --one-file-system {} +
    rm -f "$folder/lock"
    rmdir "$folder"
}
flock 9
for old in "$CACHE"/run.*; do
    [ -d "$old" ] || continue
    if flock -n "$old/lock" true 2>/dev/null; then
        say "removing $old, left by a run that was killed"
        remove_run "$old" || true
    fi
done

# -- the root, once: its recipe ----------------------------------------------------------------
make_root() {
    target=$1
    low debootstrap --variant=minbase bookworm "$target" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
        || { say "debootstrap failed; see $CACHE/debootstrap.log"; return 1; }
    # A Debian 12 machine's sources: the release, its updates and its security archive.
    cat >"$target/etc/apt/sources.list" <<SOURCES
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY bookworm-security main
SOURCES
    # What debootstrap took from this host, and what apt fetched for it: each run sets its
    # own, and starts with no package lists, as a machine nobody has run apt on.
    rm -f "$target/etc/hostname" "$target/etc/resolv.conf"
    rm -rf "$target"/var/lib/apt/lists/* "$target"/var/cache/apt/*.bin
    find "$target/var/cache/apt/archives" -name '*.deb' -delete
    mkdir -p "$target$CHECKOUT"
    chmod 755 "$target/srv" "$target$CHECKOUT"
}
# -- end of the recipe -------------------------------------------------------------------------

stamp=$( (sed -n '/^# -- the root, once/,/^# -- end of the recipe/p' "$0"; echo "$MIRROR $SECURITY") \
    | sha256sum | cut -c1-16)
if [ "$rebuild" = 1 ] || [ "$(cat "$ROOT/.lnk-fresh-recipe" 2>/dev/null)" != "$stamp" ]; then
    begun=$(date +%s)
    say "making the minimal Debian 12 root in $ROOT (once; a few minutes)"
    rm -rf --one-file-system "$ROOT.new"
    make_root "$ROOT.new"
    echo "$stamp" >"$ROOT.new/.lnk-fresh-recipe"
    rm -rf --one-file-system "$ROOT"
    mv "$ROOT.new" "$ROOT"
    say "root made in $(($(date +%s) - begun)) s"
fi

# -- this run's root -------------------------------------------------------------------------
flock -s 9
run=$(mktemp -d "$CACHE/run.XXXXXX")
exec 8>"$run/lock"
flock 8
ns_pid=""
tail_pid=""
finish() {
    status=$?
    trap - EXIT INT TERM HUP
    if [ -n "$ns_pid" ] && kill -0 "$ns_pid" 2>/dev/null; then
        # unshare's pid 1 dies with it (--kill-child), and every process of the run with
        # its pid 1.
        kill -KILL "$ns_pid" 2>/dev/null || true
        wait "$ns_pid" 2>/dev/null || true
    fi
    [ -z "$tail_pid" ] || kill "$tail_pid" 2>/dev/null || true
    # Every mount of the run was made in its own mount namespace, gone with its last
    # process; any that shows in the host's table all the same is undone, deepest first.
    grep " $run/" /proc/self/mountinfo | cut -d' ' -f5 | sort -r | while read -r point; do
        umount -l "$point" 2>/dev/null || true
    done
    say "removing the run's copy of the root"
    remove_run "$run" || status=1
    exec 8>&-
    exit "$status"
}
trap finish EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

begun=$(date +%s)
R=$run/root
cp -a "$ROOT" "$R"
flock -u 9
(cd "$REPO" && git ls-files -z --cached --others --exclude-standard \
    | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$R$CHECKOUT"
# This host's name, and where it finds names: the network is the host's.
hostname >"$R/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
    "$(hostname)" >"$R/etc/hosts"
cat /etc/resolv.conf >"$R/etc/resolv.conf"
# pip reaches PyPI as this host does: its trust store (a proxy's own authority, where there
# is one), kept also where update-ca-certificates takes a machine's local authorities
# from, in case something installs ca-certificates and makes the bundle again; its pip
# settings.
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    mkdir -p "$R/etc/ssl/certs" "$R/usr/local/share/ca-certificates"
    cp /etc/ssl/certs/ca-certificates.crt "$R/etc/ssl/certs/ca-certificates.crt"
    cp /etc/ssl/certs/ca-certificates.crt "$R/usr/local/share/ca-certificates/this-host.crt"
fi
[ ! -f /etc/pip.conf ] || cp /etc/pip.conf "$R/etc/pip.conf"
say "root copied and checkout put in $CHECKOUT in $(($(date +%s) - begun)) s"

# -- into it ---------------------------------------------------------------------------------
# Run by unshare as the run's pid 1, in its own mount and pid namespaces: the mounts,
# pivot_root, the old root let go; then, in the new root, the second stage.
enter='set -eu
R=$1; shift
mount --bind "$R" "$R"
mount -t proc -o nosuid,nodev,noexec proc "$R/proc"
mount --rbind /sys "$R/sys"
mount --rbind /dev "$R/dev"
mount -t tmpfs -o nosuid,nodev,mode=1777 shm "$R/dev/shm"
mount -t tmpfs -o nosuid,nodev,mode=755 run "$R/run"
mkdir -m 1777 "$R/run/lock"
cd "$R"
pivot_root . .
umount -l .
cd /
exec /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root USER=root LOGNAME=root SHELL=/bin/bash LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    "$@"'
# The second stage, pid 1 of the root: the command as a child (pid 1 ignores what it has
# no handler for, and adopts orphans, which `wait` reaps), with SIGINT and SIGQUIT as a
# terminal delivers them (an asynchronous command of sh starts with them ignored), and
# without the run's lock file.
# The kernel part (.ci/run's boots under QEMU) is the host's CI's: the fresh root tests
# what a person's machine runs, the suite.
stage2='cd '"$CHECKOUT"'
export LNK_CI_KERNELS=0
env --default-signal=INT,QUIT "$@" 8>&- &
status=0
wait $! || status=$?
echo "ci/fresh.sh: $1 ended with status $status" >&2
exit "$status"'

# enter_root COMMAND...: replace this shell by unshare running COMMAND in the fresh root,
# with CI=true and this host's pip settings (each NAME=value one argument) besides a
# login's own variables, and no open file but the standard three and the run's lock (bash
# closes the rest: whatever this shell was started with is no business of the machine's).
enter_root() {
    for name in PIP_CERT PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST PIP_DEFAULT_TIMEOUT \
            SSL_CERT_FILE REQUESTS_CA_BUNDLE; do
        value=$(printenv "$name" || true)
        [ -z "$value" ] || set -- "$name=$value" "$@"
    done
    # shellcheck disable=SC2016
    exec /bin/bash -c 'for fd in /proc/self/fd/*; do
            fd=${fd##*/}
            case $fd in 0|1|2|8) ;; *) eval "exec $fd>&-" ;; esac
        done
        exec "$@"' close-files \
        nice -n 10 unshare --mount --pid --kill-child --propagation private -- \
        /bin/sh -c "$enter" enter "$R" CI=true "$@"
}

log=$CACHE/logs/fresh-$(date +%Y%m%d-%H%M%S)-$$.log
exec 3<&0
if [ "$shell" = 1 ]; then
    say "a login shell in the fresh root; run the suite there with: .ci/run [PYTEST ARGS]"
    enter_root env --default-signal=INT,QUIT /bin/bash -c "exec 8>&-; cd $CHECKOUT && exec /bin/bash -l" <&3 &
    ns_pid=$!
    trap : INT  # the shell's own
else
    # The run writes to the log, a file: nothing of it hangs on the display (tail), whose
    # end, however it comes, never breaks the run's output.
    : >"$log"
    enter_root /bin/sh -c "$stage2" stage2 .ci/run "$@" <&3 >>"$log" 2>&1 &
    ns_pid=$!
    tail -n +1 -f --pid="$ns_pid" "$log" &
    tail_pid=$!
    # A first ^C reaches pytest too, which stops and reports: wait for it. A second stops all.
    interrupted=0
    trap 'if [ "$interrupted" = 1 ]; then exit 130; fi; interrupted=1' INT
fi
exec 3<&-
status=0
while :; do
    wait "$ns_pid" && status=0 || status=$?
    kill -0 "$ns_pid" 2>/dev/null || break
done
ns_pid=""
[ "$shell" = 0 ] || exit "$status"
wait "$tail_pid" 2>/dev/null || true
tail_pid=""

# -- the summary ---------------------------------------------------------------------------------
seconds=$(($(date +%s) - started))
# pytest's last line: "3 failed, 2612 passed, 1 skipped in 1234.56s (0:20:34)".
counts=$(grep -E '^(=+ )?[0-9]+ (passed|failed|error|errors|skipped|deselected|xfailed|xpassed)' "$log" \
    | grep -E ' in [0-9.]+s' | tail -n 1 | sed -E 's/^=+ //; s/ =+$//')
count() { echo "$counts" | grep -oE "[0-9]+ $1" | cut -d' ' -f1 | head -n 1; }
echo
echo "ci/fresh.sh: summary"
if [ -n "$counts" ]; then
    echo "  pytest:  $counts"
    passed=$(count passed); failed=$(count failed); errors=$(count 'errors?')
    echo "  passed ${passed:-0}, failed ${failed:-0}, errors ${errors:-0}"
else
    echo "  pytest:  no summary line (set-up, ruff or mypy stopped the run first; see the log)"
fi
echo "  exit status $status; $((seconds / 60)) min $((seconds % 60)) s in all (the root's copy and set-up included)"
echo "  log: $log"
exit "$status"
