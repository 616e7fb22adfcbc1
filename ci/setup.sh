#!/bin/sh
# Set up a fresh Debian machine (or a clone on one) to run lnk-sandbox from this clone:
# bubblewrap and the venv module from the OS packages, then a venv in ./.venv made with
# the system's own /usr/bin/python3 (readable by every user, unlike a pyenv under /root)
# holding lnk-sandbox and its test tools.
set -eu
cd "$(dirname "$0")/.."

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

need=""
command -v bwrap >/dev/null 2>&1 || need="$need bubblewrap"
/usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need="$need python3-venv"
command -v setpriv >/dev/null 2>&1 || need="$need util-linux"
# The network tests run curl inside the sandbox, through the proxy.
command -v curl >/dev/null 2>&1 || need="$need curl"
# The attacks on what runs as you run the person's own tools outside afterwards.
command -v hg >/dev/null 2>&1 || need="$need mercurial"
command -v lesspipe >/dev/null 2>&1 || need="$need less"
# A C compiler and Python's headers build the exec watch's compiled hot path (setup.py);
# without them the pure-Python watch is used.
command -v gcc >/dev/null 2>&1 || need="$need gcc"
[ -f "$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ] || need="$need python3-dev"
if [ -n "$need" ]; then
    echo "ci/setup.sh: installing$need" >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    # shellcheck disable=SC2086
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
    /usr/bin/python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]' --config-settings editable_mode=compat
# Compile the inner confiner now: inside the sandbox its folder is read-only.
.venv/bin/python -m compileall -q inner supervisor netns_helper >/dev/null
