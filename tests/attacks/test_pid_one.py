"""bwrap's pid 1 runs inside the sandbox without the inner's filter or Landlock, so a
program that could attach to it, read or write its memory, or take its fds would act
unfiltered (with the terminal it holds: TIOCSTI). Shown refused with and without
Landlock (whose own ptrace rule is the first wall; the filter and the /proc/1 mask the
second)."""

from __future__ import annotations

import errno

import pytest

from inner.syscalls import number
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

PTRACE_ATTACH, PTRACE_SEIZE = 16, 0x4206


def test_pid_one_cannot_be_attached_read_or_opened(sandbox: Sandbox, landlock: bool) -> None:
    calls = [
        f"{number('ptrace')},{PTRACE_ATTACH},1,0,0",
        f"{number('ptrace')},{PTRACE_SEIZE},1,0,0",
        f"{number('process_vm_readv')},1,0,0,0,0,0",
        f"{number('process_vm_writev')},1,0,0,0,0,0",
        f"{number('pidfd_open')},1,0",
    ]
    result = sandbox.probe("calls", *calls, landlock=landlock).expect(0)
    codes = [int(line.split()[2]) for line in result.stdout.splitlines()
             if line.startswith("CALL ")]
    assert codes == [errno.EPERM] * len(calls)
    for path in ("/proc/1/mem", "/proc/1/status", "/proc/1/fd/0", "/proc/1/root/etc"):
        sandbox.probe("read", path, landlock=landlock).expect(errno.ENOENT)


def test_the_programs_own_children_can_still_be_traced(sandbox: Sandbox, landlock: bool
                                                       ) -> None:
    """Debuggers keep working on the sandbox's own processes."""
    code = (
        "import ctypes, os, signal\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.kill(os.getpid(), signal.SIGSTOP); os._exit(0)\n"
        "print('STARTED')\n"
        "r = libc.ptrace(0x4206, pid, 0, 0)\n"
        "print('SEIZE', r, ctypes.get_errno())\n"
        "os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)\n"
    )
    done = sandbox.run("/usr/bin/python3", "-c", code, landlock=landlock)
    assert done.stdout.splitlines() == ["STARTED", "SEIZE 0 0"], done.stderr
