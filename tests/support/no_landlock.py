"""Run a command as on a kernel without Landlock: its syscalls answer ENOSYS.

A seccomp filter (inherited by everything the command starts, bwrap and the sandbox
included) makes landlock_create_ruleset, landlock_add_rule and landlock_restrict_self
fail with ENOSYS, the way a kernel built without Landlock answers. Usage:
    python no_landlock.py COMMAND [ARG...]
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

if not __package__:  # run by path (also by `python3 -I`): `support` is the folder above
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.seccomp_filter import (
    ABOVE,
    ALLOW,
    AT_LEAST,
    RETURN,
    errno_of,
    install,
    jump,
    native_only,
    stmt,
)


def main() -> None:
    install(native_only(
        jump(AT_LEAST, 444, 0, 3),           # nr >= 444 ...
        jump(ABOVE, 446, 2, 0),              # ... and nr <= 446
        stmt(RETURN, errno_of(errno.ENOSYS)),  # landlock_*: ENOSYS
        stmt(RETURN, ALLOW),
        stmt(RETURN, ALLOW),
    ))
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
