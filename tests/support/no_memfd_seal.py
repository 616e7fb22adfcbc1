"""Run a command as on a kernel before Linux 6.3: memfd_create knows no MFD_NOEXEC_SEAL.

A seccomp filter (inherited by everything the command starts) answers memfd_create with
EINVAL when it asks for MFD_NOEXEC_SEAL or MFD_EXEC, the way a kernel that does not know
those flags answers; every other call runs. Usage:
    python no_memfd_seal.py COMMAND [ARG...]
"""

from __future__ import annotations

import errno
import os
import platform
import sys
from pathlib import Path

if not __package__:  # run by path (also by `python3 -I`): `support` is the folder above
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.seccomp_filter import (
    ALLOW,
    ANY_BIT,
    EQUAL,
    LOAD,
    RETURN,
    args_low,
    errno_of,
    install,
    jump,
    native_only,
    stmt,
)

MEMFD_CREATE = {"x86_64": 319, "aarch64": 279}[platform.machine()]
NEW_FLAGS = 0x8 | 0x10  # MFD_NOEXEC_SEAL | MFD_EXEC


def main() -> None:
    install(native_only(
        jump(EQUAL, MEMFD_CREATE, 0, 3),        # memfd_create ...
        stmt(LOAD, args_low(1)),                # A = flags
        jump(ANY_BIT, NEW_FLAGS, 0, 1),         # ... with a flag of Linux 6.3
        stmt(RETURN, errno_of(errno.EINVAL)),   # EINVAL, as an older kernel answers
        stmt(RETURN, ALLOW),
    ))
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
