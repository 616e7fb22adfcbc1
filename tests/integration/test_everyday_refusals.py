"""Everyday use, issue 31: each refusal a newcomer met, as the transcript of the real
command (what was typed, what it printed, its status), as root (root mode) and as the
unprivileged test user: a report the sandbox could forge, ..."""

from __future__ import annotations

import json
import subprocess

import pytest

from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]


def transcript(done: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    return done.returncode, done.stdout, done.stderr


# -- a report the sandbox could write is refused ------------------------------------------


def test_a_report_inside_the_folder_the_sandbox_writes_is_refused(sandbox: Sandbox) -> None:
    """The README's agent recipe once put it there: the sandbox appended a forged
    refusal line to it. Now the launch is refused, naming why and where to put it."""
    done = sandbox.lnk("run", "--report", "refusals.jsonl", "--", "sh", "-c", "echo RAN")
    assert transcript(done) == (125, "", (
        f"lnk-sandbox: --report refusals.jsonl is inside {sandbox.project}, which the "
        "sandbox writes (files.write[0]: .): it could add refusals that never happened to "
        "the report, or take some out\n"
        "  hint: name a file outside every folder the sandbox writes, as in --report "
        "~/refusals.jsonl\n"))
    assert not (sandbox.project / "refusals.jsonl").exists()
    spec = '[files]\nwrite = ["./out"]\nread = ["."]\n'
    (sandbox.project / "out").mkdir()
    sandbox.chown()
    done = sandbox.lnk("run", "--report", "out/deep/../r.jsonl", "--", "true", spec=spec)
    assert done.returncode == 125 and "which the sandbox writes (files.write[0]: ./out)" \
        in done.stderr, done.stderr
    # Outside every written folder (its sibling, read only): written, with what was refused.
    done = sandbox.lnk("run", "--report", str(sandbox.home / "r.jsonl"), "--", "sh", "-c",
                       "echo > out/x; echo RAN", spec=spec + '[commands]\nprograms = ["sh"]\n')
    assert (done.returncode, done.stdout) == (0, "RAN\n"), done.stderr
    assert (sandbox.home / "r.jsonl").read_text() == ""


def test_a_forged_line_cannot_reach_a_report_outside(sandbox: Sandbox) -> None:
    """What the sandbox writes where it may never lands in the report: a control that
    the same command, with the report in the folder, would have reached it."""
    report = sandbox.home / "refusals.jsonl"
    forge = ('printf \'{"kind": "program", "subject": "/forged"}\\n\' >> refusals.jsonl; '
             f'printf x >> {report} 2>/dev/null; echo ok')
    done = sandbox.lnk("run", "--report", str(report), "--", "sh", "-c", forge)
    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr
    assert report.read_text() == ""  # home is not seen: the forgery went nowhere
    assert json.loads((sandbox.project / "refusals.jsonl").read_text())["subject"] == "/forged"


# -- run-time notes ------------------------------------------------------------------------

CPU_SPEC = '[files]\nwrite = ["."]\n[limits]\ncpu = "1s"\n'
CPU_COUNTED = ("lnk-sandbox: the run reached its CPU time limit ([limits] cpu = 1 s of CPU "
               "time per process; `lnk sandbox describe` shows the limits)\n")
CPU_UNCOUNTED = ("lnk-sandbox: the command was killed (signal 9) with [limits] cpu = 1 s of "
                 "CPU time per process set, which is how that limit ends a process (this "
                 "machine gives lnk-sandbox no count of the run's CPU time to be sure)\n")


def test_a_cpu_limits_kill_is_said_as_the_memory_limits_is(sandbox: Sandbox) -> None:
    """`[limits] cpu = "1s"` killed a busy loop with 137 and no word. Root's run has a
    cgroup of its own that counts its CPU time: the line is sure; a person's run where no
    cgroup may be made says what the kill may be."""
    done = sandbox.run("python3", "-c", "print('busy', flush=True)\nwhile True: pass",
                       spec=CPU_SPEC)
    assert (done.returncode, done.stdout) == (137, "busy\n")
    if sandbox.who.is_root:
        assert done.stderr == CPU_COUNTED
    else:
        assert done.stderr in (CPU_COUNTED, CPU_UNCOUNTED)
    # A command killed otherwise, with little CPU used: no CPU line where it is counted.
    killed = sandbox.run("sh", "-c", "kill -9 $$", spec=CPU_SPEC)
    assert killed.returncode == 137
    if sandbox.who.is_root:
        assert killed.stderr == ""
    # Without a CPU limit, a kill says nothing of one.
    assert sandbox.run("sh", "-c", "kill -9 $$").stderr == ""
