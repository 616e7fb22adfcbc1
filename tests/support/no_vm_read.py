"""Run a command as under Docker's default seccomp profile without CAP_SYS_PTRACE, as far
as reading another process's memory goes: process_vm_readv answers EPERM (the exec
watch then cannot read a program's path; direct mode's metadata handlers read
/proc/PID/mem instead). Inherited by everything the command starts. Usage:
    python no_vm_read.py COMMAND [ARG...]
"""

from __future__ import annotations

import errno
import os
import platform
import sys
from pathlib import Path

if not __package__:  # run by path (also by `python3 -I`): `support` is the folder above
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.seccomp_filter import ALLOW, EQUAL, RETURN, errno_of, install, jump, native_only, stmt

PROCESS_VM_READV = {"x86_64": 310, "aarch64": 270}[platform.machine()]


def main() -> None:
    install(native_only(
        jump(EQUAL, PROCESS_VM_READV, 0, 1),  # process_vm_readv ...
        stmt(RETURN, errno_of(errno.EPERM)),  # ... EPERM
        stmt(RETURN, ALLOW),
    ))
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
