"""Signals reach the target's own handler; no process of the tree outlives the run.

bwrap forwards no signal and a signal that kills it kills the target with it, so the
supervisor starts bwrap with the terminal signals ignored, passes the ones sent to
itself on to the sandbox's process group, and hands it the terminal's foreground.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

from support.sandbox import LNK, PROBE_SOURCE, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _wait_gone(pids: set[int], timeout: float = 10) -> set[int]:
    end = time.monotonic() + timeout
    while (left := _alive(pids)) and time.monotonic() < end:
        time.sleep(0.05)
    return left


def _start(sandbox: Sandbox, *command: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--", *command],
        cwd=sandbox.project, env=sandbox.env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )
    assert process.stdout is not None
    lines = [process.stdout.readline(), process.stdout.readline()]
    assert lines[0].startswith("STARTED"), lines
    assert lines[1] == "READY\n", lines
    return process


def _end(process: subprocess.Popen[str]) -> int:
    process.communicate(timeout=30)
    return process.returncode


def _handler_probe(sig: int, code: int) -> tuple[str, ...]:
    return (PYTHON_INSIDE, "-c", PROBE_SOURCE, "sleep-handle", str(int(sig)), str(code))


def test_sigint_to_the_supervisor_runs_the_targets_handler(sandbox: Sandbox) -> None:
    process = _start(sandbox, *_handler_probe(signal.SIGINT, 42))
    process.send_signal(signal.SIGINT)
    assert _end(process) == 42


def test_sigterm_to_the_supervisor_runs_the_targets_handler(sandbox: Sandbox) -> None:
    process = _start(sandbox, *_handler_probe(signal.SIGTERM, 43))
    tree = _descendants(process.pid)
    process.send_signal(signal.SIGTERM)
    assert _end(process) == 43
    assert _wait_gone(tree) == set()


def test_sigterm_with_a_default_disposition_ends_the_tree(sandbox: Sandbox) -> None:
    process = _start(sandbox, *_handler_probe(signal.SIGUSR1, 1))
    tree = _descendants(process.pid)
    assert len(tree) >= 3  # bwrap, its pid 1, the target
    process.send_signal(signal.SIGTERM)
    assert _end(process) == 128 + signal.SIGTERM
    assert _wait_gone(tree) == set()


def test_a_target_ignoring_sigterm_is_killed_by_a_second_one(sandbox: Sandbox) -> None:
    process = _start(sandbox, "/bin/sh", "-c",
                     "trap '' TERM; echo STARTED; echo READY; while :; do sleep 1; done")
    tree = _descendants(process.pid)
    process.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    assert process.poll() is None
    process.send_signal(signal.SIGTERM)
    assert _end(process) == 128 + signal.SIGKILL
    assert _wait_gone(tree) == set()


def test_sigkill_of_the_supervisor_leaves_no_process(sandbox: Sandbox) -> None:
    process = _start(sandbox, *_handler_probe(signal.SIGUSR1, 1))
    tree = _descendants(process.pid)
    assert len(tree) >= 3
    process.kill()
    _end(process)
    assert _wait_gone(tree) == set()


def _pty_run(sandbox: Sandbox, command: list[str], typed: list[tuple[bytes, bytes]]) -> tuple[
        int, bytes]:
    """Run lnk at a pseudo-terminal; after each `expect` appears, type `text`."""
    pid, master = pty.fork()
    if pid == 0:
        os.chdir(sandbox.project)
        argv = [*sandbox.who.prefix, LNK, "sandbox", "run", "--", *command]
        os.execve(argv[0] if argv[0].startswith("/") else f"/usr/bin/{argv[0]}", argv,
                  sandbox.env({"TERM": "dumb"}))
    output = b""
    pending = list(typed)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
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


def test_ctrl_c_at_a_terminal_runs_the_targets_handler(sandbox: Sandbox) -> None:
    status, output = _pty_run(sandbox, list(_handler_probe(signal.SIGINT, 42)),
                              [(b"READY", b"\x03")])
    assert b"STARTED" in output
    assert status == 42, output


def test_a_program_at_a_terminal_reads_it_interactively(sandbox: Sandbox) -> None:
    script = 'echo STARTED; read line; echo "GOT $line"; test -t 0 && echo TTY'
    status, output = _pty_run(sandbox, ["/bin/sh", "-c", script],
                              [(b"STARTED", b"hello\n")])
    assert status == 0, output
    assert b"GOT hello" in output
    assert b"TTY" in output
