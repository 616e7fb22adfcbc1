"""Signals reach the target's own handler; no process of the tree outlives the run.

bwrap forwards no signal and a signal that kills it kills the target with it, so the
supervisor starts bwrap with the terminal signals ignored, passes the ones sent to
itself on to the sandbox's process group, and hands it the terminal's foreground.
"""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from support.processes import at_terminal, descendants, wait_gone
from support.sandbox import LNK, PROBE_SOURCE, PYTHON_INSIDE, Sandbox

# Each test runs with both inner confiners: the compiled one and its Python fallback.
pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns,
              pytest.mark.usefixtures("inner")]


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


def _terminal(sandbox: Sandbox, command: list[str], typed: tuple[bytes, bytes]
              ) -> tuple[int, bytes]:
    return at_terminal([*sandbox.who.prefix, LNK, "sandbox", "run", "--", *command],
                       cwd=sandbox.project, env=sandbox.env({"TERM": "dumb"}), typed=(typed,))


def _end(process: subprocess.Popen[str]) -> int:
    return _ended(process)[0]


def _ended(process: subprocess.Popen[str]) -> tuple[int, str]:
    """Its status and what lnk said. An open bug: a signal sent just
    after READY sometimes does not end the target, though lnk forwarded it (a SIGTERM
    ends in 137 after the 10 s grace, lnk saying nothing; a SIGINT hangs): about 1 run
    in 4 of this file alone, none with a few ms between READY and the signal."""
    _, stderr = process.communicate(timeout=30)
    return process.returncode, stderr


def _handler_probe(sig: int, code: int) -> tuple[str, ...]:
    return (PYTHON_INSIDE, "-c", PROBE_SOURCE, "sleep-handle", str(int(sig)), str(code))


def test_sigint_to_the_supervisor_runs_the_targets_handler(sandbox: Sandbox) -> None:
    process = _start(sandbox, *_handler_probe(signal.SIGINT, 42))
    process.send_signal(signal.SIGINT)
    assert _end(process) == 42


def test_sigterm_to_the_supervisor_runs_the_targets_handler(sandbox: Sandbox) -> None:
    process = _start(sandbox, *_handler_probe(signal.SIGTERM, 43))
    tree = descendants(process.pid)
    process.send_signal(signal.SIGTERM)
    status, said = _ended(process)
    assert status == 43, said
    assert wait_gone(tree) == set()


def test_sigterm_with_a_default_disposition_ends_the_tree(sandbox: Sandbox) -> None:
    process = _start(sandbox, *_handler_probe(signal.SIGUSR1, 1))
    tree = descendants(process.pid)
    assert len(tree) >= 3  # bwrap, its pid 1, the target
    process.send_signal(signal.SIGTERM)
    assert _end(process) == 128 + signal.SIGTERM
    assert wait_gone(tree) == set()


def test_a_target_ignoring_sigterm_is_killed_by_a_second_one(sandbox: Sandbox) -> None:
    process = _start(sandbox, "/bin/sh", "-c",
                     "trap '' TERM; echo STARTED; echo READY; while :; do sleep 1; done")
    tree = descendants(process.pid)
    process.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    assert process.poll() is None
    process.send_signal(signal.SIGTERM)
    assert _end(process) == 128 + signal.SIGKILL
    assert wait_gone(tree) == set()


def test_sigkill_of_the_supervisor_leaves_no_process(sandbox: Sandbox) -> None:
    process = _start(sandbox, *_handler_probe(signal.SIGUSR1, 1))
    tree = descendants(process.pid)
    assert len(tree) >= 3
    process.kill()
    _end(process)
    assert wait_gone(tree) == set()


def test_ctrl_c_at_a_terminal_runs_the_targets_handler(sandbox: Sandbox) -> None:
    status, output = _terminal(sandbox, list(_handler_probe(signal.SIGINT, 42)),
                               (b"READY", b"\x03"))
    assert b"STARTED" in output
    assert status == 42, output


def test_a_program_at_a_terminal_reads_it_interactively(sandbox: Sandbox) -> None:
    script = 'echo STARTED; read line; echo "GOT $line"; test -t 0 && echo TTY'
    status, output = _terminal(sandbox, ["/bin/sh", "-c", script], (b"STARTED", b"hello\n"))
    assert status == 0, output
    assert b"GOT hello" in output
    assert b"TTY" in output
