"""Run bwrap as under Ubuntu 24.04's AppArmor restriction: it makes its user namespace,
and the kernel refuses it the uid map.

Under `kernel.apparmor_restrict_unprivileged_userns = 1`, unshare(CLONE_NEWUSER)
succeeds and the namespace holds no capability, so bwrap's first act there, writing its
uid map, fails: `bwrap: setting up uid map: Permission denied`, exit 1, before any
sandbox exists. This machine's kernel has no AppArmor; a seccomp filter on the real bwrap
makes the kernel refuse the same open with the same errno: bwrap opens its maps (and,
before its sandbox starts, nothing else) with openat(dirfd, "uid_map", O_RDWR |
O_CLOEXEC), and the filter answers an openat with exactly those flags EACCES. Everything
else bwrap does runs as it is: unshare, --version, --help. Usage:

    python userns_restricted.py BWRAP [ARG...]       # bwrap, restricted

`install(folder)` writes `folder/bwrap` starting the real one through this file, to put
first on lnk-sandbox's PATH (it finds bwrap there): only bwrap is restricted, as only
bwrap is under Ubuntu's restriction (lnk-sandbox itself makes no user namespace unless
run by root, and root, holding CAP_SYS_ADMIN, is not restricted).
"""

from __future__ import annotations

import errno
import os
import platform
import shutil
import sys
from pathlib import Path

if not __package__:  # run by path (also by `python3 -I`): `support` is the folder above
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.seccomp_filter import (
    ALLOW,
    EQUAL,
    LOAD,
    RETURN,
    args_low,
    errno_of,
    jump,
    native_only,
    stmt,
)
from support.seccomp_filter import (
    install as install_filter,
)

OPENAT = {"x86_64": 257, "aarch64": 56}[platform.machine()]
O_RDWR_CLOEXEC = os.O_RDWR | os.O_CLOEXEC


def restrict() -> None:
    install_filter(native_only(
        jump(EQUAL, OPENAT, 0, 3),             # openat ...
        stmt(LOAD, args_low(2)),               # A = flags
        jump(EQUAL, O_RDWR_CLOEXEC, 0, 1),     # ... with bwrap's flags for its maps
        stmt(RETURN, errno_of(errno.EACCES)),  # EACCES, as the restriction answers
        stmt(RETURN, ALLOW),
    ))


def install(folder: Path) -> Path:
    """`folder/bwrap`: the real bwrap, restricted; readable and runnable by anyone (root
    mode runs bwrap as a uid of its own). This file and the filter it installs are copied
    beside it, so that no folder of the checkout needs to be open to that uid."""
    real = shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin")
    assert real is not None, "bwrap is not installed"
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    support = folder / "support"
    support.mkdir(mode=0o755, exist_ok=True)
    for source in (Path(__file__), Path(__file__).with_name("seccomp_filter.py")):
        shutil.copyfile(source, support / source.name)
        (support / source.name).chmod(0o644)
    script = support / Path(__file__).name
    wrapper = folder / "bwrap"
    wrapper.write_text(f"#!/bin/sh\nexec /usr/bin/python3 -I {script} {real} \"$@\"\n")
    wrapper.chmod(0o755)
    return wrapper


def main() -> None:
    restrict()
    os.execv(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
