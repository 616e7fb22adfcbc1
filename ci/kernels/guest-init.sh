#!/bin/sh
# PID 1 of a kernel-matrix VM (ci/kernels.sh): mount what a booted Debian has, run
# `lnk sandbox check` and the chosen tests, write the results as a tar stream to the
# second disk, power off. Whatever fails, it powers off: the host reads what came back.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb
cd /

# initramfs-tools moves /dev, /proc, /sys and /run over; the rest is this script's.
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mountpoint -q /run || mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mountpoint -q /sys/kernel/security || mount -t securityfs securityfs /sys/kernel/security
# cgroup v2, as systemd mounts it on a Debian 12 boot: root's runs get cgroups of their own.
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 cgroup2 /sys/fs/cgroup
ln -sf /proc/self/fd /dev/fd 2>/dev/null
chmod 1777 /tmp
hostname lnk-kernels
ip link set lo up

out=/var/tmp/lnk-kernel-results
rm -rf "$out"
mkdir -p "$out"
{
    echo "release $(uname -r)"
    echo "version $(uname -v)"
    echo "lsm $(cat /sys/kernel/security/lsm 2>/dev/null)"
    echo "cmdline $(cat /proc/cmdline)"
    echo "cpus $(nproc)"
} >"$out/kernel.txt"

cd /srv/lnk-sandbox
listed=$out/listed.toml
printf '[files]\nwrite = ["."]\n[commands]\nprograms = ["sh"]\n' >"$listed"
chmod 644 "$listed"
for who in root lnk-test; do
    # A home and a project of the user's own: a spec may not write a folder holding home.
    base=/tmp/lnk-check-$who
    mkdir -p "$base/home" "$base/project"
    chown -R "$who:" "$base"
    prefix=""
    [ "$who" = root ] || prefix="setpriv --reuid=lnk-test --regid=lnk-test --init-groups"
    for spec in "" "$listed"; do
        echo "lnk-kernel-init: lnk sandbox check as $who" >/dev/console
        echo "== lnk sandbox check ${spec:+--spec listed.toml }as $who"
        # shellcheck disable=SC2086
        (cd "$base/project" && HOME=$base/home $prefix /srv/lnk-sandbox/.venv/bin/lnk \
            sandbox check ${spec:+--spec "$spec"} 2>&1)
        echo "(exit $?)"
    done
done >"$out/check.txt"
echo "lnk-kernel-init: running the tests" >/dev/console

start=$(date +%s)
# The arguments the host chose (one a line), then where the results go.
set --
while IFS= read -r arg; do set -- "$@" "$arg"; done </srv/lnk-sandbox-pytest-args
# -P: the installed copy, as ci/test.sh tests it, never the checkout's folders beside it.
# pytest's marks go to the console as they come: the host takes a console silent for
# minutes for a hung guest.
: >"$out/pytest.txt"
tail -f "$out/pytest.txt" >/dev/console &
follow=$!
.venv/bin/python -P -m pytest -p no:cacheprovider -q -rA --junitxml="$out/junit.xml" "$@" \
    >>"$out/pytest.txt" 2>&1
echo $? >"$out/pytest.rc"
sleep 1
kill "$follow" 2>/dev/null
echo $(($(date +%s) - start)) >"$out/pytest.seconds"
echo "lnk-kernel-init: tests done in $(cat "$out/pytest.seconds") s: $(tail -n 1 "$out/pytest.txt")" \
    >/dev/console

(cd "$out" && tar -cf /dev/vdb .)
sync
echo o >/proc/sysrq-trigger
sleep 60
