"""Probes of what this machine offers, each run once per test session.

Each returns None (or the ABI) when the capability is there, else the reason it is not,
said the way a skip message should say it; `missing` turns a reason into the skip (or,
under CI, the failure).
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pytest

TEST_USER = "lnk-test"
VENV_BIN = Path(sys.executable).parent
# Where every capability must be there (CI's machine has them all): a skip for one that
# is not fails instead, since an enforcement test that silently skipped proves nothing.
MUST_RUN = os.environ.get("CI", "").lower() == "true" or os.environ.get("LNK_MUST_RUN") == "1"


def missing(reason: str) -> NoReturn:
    """Skip for a missing capability, or fail where every capability must be there."""
    if MUST_RUN:
        pytest.fail(f"capability missing where it must be present (CI): {reason}",
                    pytrace=False)
    pytest.skip(reason)


@functools.cache
def git_problem() -> str | None:
    return None if shutil.which("git") else "git is not installed (apt-get install git)"


@functools.cache
def person_tools_problem() -> str | None:
    missing = [name for name, path in (("mercurial", "hg"), ("less", "lesspipe"))
               if not shutil.which(path)]
    return f"apt-get install {' '.join(missing)}" if missing else None


@functools.cache
def bwrap_problem() -> str | None:
    path = shutil.which("bwrap")
    if path is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    usage = subprocess.run([path, "--help"], capture_output=True, text=True).stdout
    if "--ro-bind-fd" not in usage:
        return f"{path} has no --bind-fd (needs Debian's 0.8.0-2+deb12u1 or 0.10+)"
    return None


def compiled_inner_problem() -> str | None:
    """Why the compiled inner confiner (setup.py's build of inner/confine.c) cannot run
    here, as the supervisor judges it; None when it can."""
    from supervisor.linux.inner_program import compiled_problem

    return compiled_problem()


@functools.cache
def landlock_abi() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return int(abi) if abi > 0 else 0


@functools.cache
def memfd_noexec_seal_problem() -> str | None:
    """Whether memfd_create takes MFD_NOEXEC_SEAL: without it (before Linux 6.3) the
    exec watch cannot seal memory files, and under a program list they are refused."""
    try:
        os.close(os.memfd_create("lnk-test-probe", 0x8 | 0x1))  # NOEXEC_SEAL | CLOEXEC
    except OSError as err:
        return f"the kernel's memfd_create has no MFD_NOEXEC_SEAL ({err.strerror})"
    return None


_NOTIFY_PROBE = r"""
import ctypes, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
assert libc.prctl(38, 1, 0, 0, 0) == 0
prog = struct.pack("=HBBI", 0x06, 0, 0, 0x7fff0000)
buf = ctypes.create_string_buffer(prog)
class F(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fprog = F(1, ctypes.cast(buf, ctypes.c_void_p))
fd = libc.syscall(317, 1, 8 | 32, ctypes.byref(fprog))
sys.exit(0 if fd >= 0 else ctypes.get_errno())
"""


@functools.cache
def notify_problem() -> str | None:
    done = subprocess.run([sys.executable, "-c", _NOTIFY_PROBE], capture_output=True)
    if done.returncode != 0:
        return (f"seccomp user notification with WAIT_KILLABLE_RECV is unavailable "
                f"(errno {done.returncode})")
    return None


def user_ids() -> tuple[int, int]:
    import pwd

    entry = pwd.getpwnam(TEST_USER)
    return entry.pw_uid, entry.pw_gid


def as_test_user() -> list[str]:
    """The prefix that runs a command as the unprivileged test user."""
    return ["setpriv", f"--reuid={TEST_USER}", f"--regid={TEST_USER}", "--init-groups"]


@functools.cache
def test_user_problem() -> str | None:
    """Make the unprivileged test user if missing; check it can run this venv."""
    if os.geteuid() != 0:
        return "only root can run tests as another user"
    try:
        user_ids()
    except KeyError:
        made = subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
             TEST_USER], capture_output=True, text=True)
        if made.returncode != 0:
            return f"cannot create the test user {TEST_USER}: {made.stderr.strip()}"
    check = subprocess.run([*as_test_user(), str(VENV_BIN / "python"), "-c", "import supervisor"],
                           capture_output=True, text=True)
    if check.returncode != 0:
        return (f"the test user {TEST_USER} cannot run {VENV_BIN / 'python'} with lnk-sandbox "
                "(make the venv with /usr/bin/python3 in a folder others can read; a pyenv "
                f"under /root is not): {check.stderr.strip()[-300:]}")
    return None


@functools.cache
def userns_problem() -> str | None:
    prefix: list[str] = []
    if os.geteuid() == 0:
        reason = test_user_problem()
        if reason:
            return reason
        prefix = as_test_user()
    done = subprocess.run([*prefix, "bwrap", "--unshare-user", "--ro-bind", "/", "/", "true"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return f"unprivileged user namespaces are unavailable: {done.stderr.strip()}"
    return None
