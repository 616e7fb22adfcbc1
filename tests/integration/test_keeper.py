"""The run's keeper (supervisor/linux/keeper.py) as a run starts it: at its pipe's end it
kills what carries the run's mark and nothing else, unless the supervisor said the run
ended; either way it exits, holding no fd of its caller's."""

from __future__ import annotations

import os
import secrets
import select
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from supervisor.linux.keeper import Keeper, mark
from supervisor.linux.runs import tag

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"),
                                reason="the keeper is Linux's (pidfd_open)")

# A token of this test process's own: a keeper kills whatever carries its run's mark, so
# a token shared with another test run on the machine (another checkout's suite) would
# let that run's keeper kill this one's processes, and this one's kill that one's.
TOKEN = f"{os.getpid()}-345-{secrets.token_hex(4)}"


def _carrying(token: str) -> subprocess.Popen[bytes]:
    """A process whose command line carries `token`'s mark, as bwrap's does, once it
    has exec'd (waited for: its command line is the marked one only from then on)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                                "bwrap", *tag(token), "--unshare-user"])
    deadline = time.monotonic() + 10
    while mark(token) not in _command_line(process.pid):
        assert time.monotonic() < deadline and process.poll() is None, "it never exec'd"
        time.sleep(0.005)
    return process


def _command_line(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


@pytest.fixture
def keeper() -> Iterator[tuple[Keeper, int]]:
    """A started keeper and a pidfd of it."""
    keeper = Keeper(TOKEN)
    keeper.start()
    assert keeper.failure is None
    pidfd = os.pidfd_open(keeper.pid)
    yield keeper, pidfd
    keeper.close()
    os.close(pidfd)


def _exits(pidfd: int, within: float = 5.0) -> bool:
    return bool(select.select([pidfd], [], [], within)[0])


def test_at_the_pipe_s_end_the_keeper_kills_the_run_s_processes_only(
        keeper: tuple[Keeper, int]) -> None:
    run = _carrying(TOKEN)
    near = _carrying(TOKEN + "0")  # 12_345_0123abcd0: another run's, not this one's
    try:
        keeper[0].close()  # the supervisor died, however
        assert _exits(keeper[1])
        assert run.wait(timeout=5) == -9
        assert near.poll() is None
    finally:
        run.kill()
        near.kill()
        run.wait()
        near.wait()


def test_told_the_run_ended_the_keeper_kills_nothing_and_exits(
        keeper: tuple[Keeper, int]) -> None:
    run = _carrying(TOKEN)
    try:
        keeper[0].ended()
        assert _exits(keeper[1])  # what it kills, it kills before it exits
        assert run.poll() is None
    finally:
        run.kill()
        run.wait()


def test_the_keeper_holds_no_fd_of_its_caller_s_nor_the_terminal() -> None:
    """Not even one its caller left inheritable (a harness's pipe, say): a keeper that
    held it would keep its reader waiting for the end of the run's keeping."""
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    keeper = Keeper(TOKEN)
    try:
        keeper.start()
        _no_fd_but_its_own(keeper.pid)
    finally:
        keeper.ended()
        os.close(read_end)
        os.close(write_end)


def _no_fd_but_its_own(pid: int) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # it closes what it inherited once it runs
        fds = sorted(int(fd) for fd in os.listdir(f"/proc/{pid}/fd"))
        if fds == [0, 1, 2]:
            break
        time.sleep(0.02)
    assert fds == [0, 1, 2]
    assert os.readlink(f"/proc/{pid}/fd/0").startswith("pipe:")
    assert os.readlink(f"/proc/{pid}/fd/1") == os.readlink(f"/proc/{pid}/fd/2") == "/dev/null"
    assert os.getsid(pid) == pid  # a session of its own: no terminal, no Ctrl-C
    assert os.readlink(f"/proc/{pid}/cwd") == "/"


def test_the_keeper_imports_only_what_it_uses() -> None:
    """It starts with every run, beside bwrap: the standard library's smallest parts
    (signal.py's enums, typing and the supervisor's package are a start's milliseconds)."""
    from supervisor.installation import interpreter
    from supervisor.linux import keeper

    done = subprocess.run([interpreter()[0], "-I", "-S", "-X", "importtime", keeper.__file__,
                           TOKEN], input=b"ended\n", capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    imported = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()
                if line.startswith("import time:") and "|" in line} - {"imported package"}
    baseline = subprocess.run([interpreter()[0], "-I", "-S", "-X", "importtime", "-c", "pass"],
                              capture_output=True, timeout=30).stderr.decode()
    imported -= {line.split("|")[-1].strip() for line in baseline.splitlines()}
    assert imported <= {"__future__", "os", "stat", "_stat", "posixpath", "genericpath",
                        "_collections_abc", "time", "_signal"}, imported
