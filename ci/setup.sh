#!/bin/sh
# Set up a fresh Debian machine (or a clone on one) to run lnk-sandbox from this clone:
# what running needs from the OS packages, then a venv in ./.venv made with the system's
# own /usr/bin/python3 (readable by every user, unlike a pyenv under /root) holding
# lnk-sandbox installed as a user installs it: built into a wheel, not editable, so that
# what runs (and what the tests run) is what `pip install .` gives a person.
#
#   ci/setup.sh            what running a sandbox needs
#   ci/setup.sh --test     and what the tests need: the programs they run, the test tools
#
# LNK_EDITABLE=1 installs editable instead, for working on the code without setting up
# again after each change (CONTRIBUTING.md); CI never sets it.
set -eu
cd "$(dirname "$0")/.."

for_tests=0
case "${1:-}" in
    --test) for_tests=1 ;;
    "") ;;
    *) echo "ci/setup.sh: unknown argument $1 (--test, or nothing)" >&2; exit 2 ;;
esac

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Each `program package` pair: the package installed when the program is missing.
need=""
want() {
    command -v "$1" >/dev/null 2>&1 || case " $need " in
        *" $2 "*) ;;
        *) need="$need $2" ;;
    esac
}
want bwrap bubblewrap
# The system's own Python, which the venv is made with: a minimal Debian (debootstrap's
# minbase, a container's image) has none.
[ -x /usr/bin/python3 ] || need="$need python3"
/usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need="$need python3-venv"
# Root mode changes its credentials with setpriv.
want setpriv util-linux
# A C compiler and Python's headers build the exec watch's compiled hot path, and the C
# library's static archive (libc6-dev) the inner confiner, a static program (setup.py);
# without them the pure-Python watch and the Python inner are used.
want gcc gcc
dpkg-query -W -f='${Status}' libc6-dev 2>/dev/null | grep -q "ok installed" \
    || need="$need libc6-dev"
[ -f "$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)/Python.h" ] \
    || need="$need python3-dev"
if [ "$for_tests" = 1 ]; then
    # The programs the tests run, inside a sandbox or outside it as the person would
    # (a fresh Debian 12 root made with debootstrap has none of them: ci/fresh.sh).
    want curl curl          # the network tests, through the proxy
    want git git            # git inside, and the person's git outside
    want less less          # a pager that runs the person's ~/.lessfilter
    want lesspipe less
    want hg mercurial       # the person's hg outside, after a plant in .hg
    want nvim neovim        # an editor that runs a project's settings
    want fish fish          # the person's fish outside, after a plant its conf.d sources (test_red_team3)
    want iptables iptables  # a NAT rule delivering a public address here (test_proxy_delivered_here)
    want ip iproute2        # the lab's network namespaces, a host address
    want ps procps          # ps, pgrep (test_inspect), sysctl (test_root_mode)
    want gdb gdb            # the person's debugger outside, after a plant (test_red_team2_tools)
    want vim vim            # vim's exrc, outside, after a plant (test_red_team2_tools)
    want make make          # learn and run of a project that builds
    want chromium chromium  # a real browser inside, with and without its own sandbox
    # The run without namespaces in a real unprivileged container
    # (tests/integration/test_container.py): Debian's Docker, whose daemon the test starts
    # when none runs, and debootstrap for the image it makes once (ci/container-image.sh).
    want dockerd docker.io
    want debootstrap debootstrap
    # A real ssh-agent holding a key: test_credentials, test_network's [network] unix.
    want ssh-agent openssh-client
    # The test registries' certificates (support/registry.py: test_recipe_packages), and
    # /etc/ssl/private, root's own folder (test_root_mode).
    want openssl openssl
    # The README's packages recipe runs npm and node (test_readme_recipes); node is the
    # JIT kept working under a list (test_exec_watch).
    want node nodejs
    want npm npm
fi
if [ -n "$need" ]; then
    echo "ci/setup.sh: installing$need" >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq
    # shellcheck disable=SC2086
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install \
        -y -qq --no-install-recommends $need >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
    /usr/bin/python3 -m venv .venv
fi
extra=""
[ "$for_tests" = 0 ] || extra="[test]"
pip() {
    .venv/bin/python -m pip -q --disable-pip-version-check "$@"
}
if [ "${LNK_EDITABLE:-0}" = 1 ]; then
    pip install -e ".$extra" --config-settings editable_mode=compat
else
    # A wheel of this checkout, installed whole: pip builds a local folder again each time,
    # so a change since the last set-up is what gets installed.
    pip install ".$extra"
    rm -rf build lnk_sandbox.egg-info
fi
if [ "${LNK_EDITABLE:-0}" = 1 ]; then
    # Compile the inner confiner in the clone now: inside the sandbox its folder is
    # read-only, so a first run there could not write its bytecode (pip compiles a
    # wheel's files as it installs them).
    .venv/bin/python -m compileall -q inner supervisor netns_helper >/dev/null
fi
