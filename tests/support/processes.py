"""Process trees and terminals, for tests that watch what a run leaves behind or type
at it as a person would."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import subprocess
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple


def close_pipes(process: subprocess.Popen[str]) -> None:
    """Close a process's pipes and reap it, however the test left it (a need() that
    stopped it, a SIGKILL): a pipe left to the garbage collector is a ResourceWarning,
    which pytest raises in whichever later test the collector happens to run."""
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    process.wait()


def descendants(pid: int) -> set[int]:
    """Every process below `pid` now (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(
            int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def command_lines() -> dict[int, bytes]:
    """Every process's command line now (its NUL-separated arguments), by pid."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = (entry / "cmdline").read_bytes()
            except OSError:
                continue
    return found


def alive(pids: set[int]) -> set[int]:
    """Those of `pids` still running (zombies count as gone)."""
    living = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            living.add(pid)
    return living


def wait_gone(pids: set[int], timeout: float = 10) -> set[int]:
    """Wait until none of `pids` runs; those still running after `timeout`."""
    end = time.monotonic() + timeout
    while (left := alive(pids)) and time.monotonic() < end:
        time.sleep(0.05)
    return left


def wait_until(condition: Callable[[], bool], timeout: float = 10) -> bool:
    """Wait until `condition()` holds; whether it did within `timeout`."""
    end = time.monotonic() + timeout
    while not (held := condition()) and time.monotonic() < end:
        time.sleep(0.02)
    return held


# Inside a run that acts only once the person outside has: it says it started, makes
# `ready` in its working directory, and waits there for `go` before going on.
WAIT_FOR_GO = "echo STARTED; touch ready; while [ ! -e go ]; do sleep 0.05; done; "


def while_it_runs(argv: list[str], *, cwd: Path, env: dict[str, str],
                  act: Callable[[], None], end_first: float = 0
                  ) -> tuple[int, str, str]:
    """Start `argv` (whose command begins with WAIT_FOR_GO), do `act` outside once it is
    ready, then give the go, after waiting up to `end_first` seconds for the run to end
    by itself (a run lnk-sandbox ends for what `act` did); (status, stdout, stderr)."""
    run = subprocess.Popen(argv, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    try:
        wait_until(lambda: (cwd / "ready").exists() or run.poll() is not None, timeout=30)
        assert (cwd / "ready").exists(), run.communicate(timeout=10)
        act()
        if end_first:
            wait_until(lambda: run.poll() is not None, timeout=end_first)
        (cwd / "go").touch()
        out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
        close_pipes(run)
    return run.returncode, out, err


def at_terminal(argv: list[str], *, cwd: Path, env: dict[str, str],
                typed: tuple[tuple[bytes, bytes], ...] = (), timeout: float = 60
                ) -> tuple[int, bytes]:
    """Run `argv` at a pseudo-terminal; after each expected text appears, type its
    answer. The exit status and everything the terminal showed."""
    pid, master = pty.fork()
    if pid == 0:
        try:
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    output = b""
    pending = list(typed)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if select.select([master], [], [], 0.1)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        if pending and pending[0][0] in output:
            os.write(master, pending.pop(0)[1])
    _, status = os.waitpid(pid, 0)
    os.close(master)
    return os.waitstatus_to_exitcode(status), output


class AtTerminal(NamedTuple):
    """A run at a pseudo-terminal of its own: how it ended, what the terminal showed
    (as the person's terminal would receive it: `\\n` written as `\\r\\n`), and the
    terminal's modes (tcgetattr) before the run and after it ended."""

    status: int
    output: bytes
    before: list[Any]
    after: list[Any]


def in_terminal(argv: list[str], *, cwd: Path, env: dict[str, str],
                typed: tuple[tuple[bytes, bytes], ...] = (), timeout: float = 60
                ) -> AtTerminal:
    """Run `argv` as a shell runs a job at a terminal: session leader with the terminal
    as its own, in the foreground. After each expected text appears, type its answer.
    The test keeps the terminal's other end too, so its modes are read after the run as
    the next program (the person's shell) would find them."""
    master, slave = os.openpty()
    before = termios.tcgetattr(slave)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(master)
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            for fd in (0, 1, 2):
                os.dup2(slave, fd)
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    output = b""
    pending = list(typed)
    deadline = time.monotonic() + timeout
    status: int | None = None
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                output += os.read(master, 65536)
            if pending and pending[0][0] in output:
                os.write(master, pending.pop(0)[1])
            if status is None:
                done, wait_status = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = os.waitstatus_to_exitcode(wait_status)
            if status is not None and not select.select([master], [], [], 0.2)[0]:
                break
        assert status is not None, f"still running after {timeout} s:\n{output!r}"
        after = termios.tcgetattr(slave)
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(master)
        os.close(slave)
    return AtTerminal(status, output, before, after)
